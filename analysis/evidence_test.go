package analysis

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
)

// TestServerEvidenceNull: a quantity the server does not expose is null in analysis.json and
// left out of the knee's evidence, never "max KV usage 0%" (llama-server without its KV
// gauge); one it exposes keeps its value, 0 included.
func TestServerEvidenceNull(t *testing.T) {
	llama := &record.ServerStats{Samples: 5, MeanRunning: 3.9, MaxRunning: 4, MeanWaiting: 11, MaxWaiting: 12,
		Series: []string{"llamacpp:requests_deferred", "llamacpp:requests_processing"}}
	e := serverEvidence(llama)
	if e.MaxKVUsage.OK() || e.Preemptions.OK() || e.MeanRunning != 3.9 || e.MaxRunning != 4 || e.MaxWaiting != 12 {
		t.Fatalf("llama.cpp evidence %+v", e)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max_kv_usage":null`) || !strings.Contains(string(b), `"preemptions":null`) {
		t.Errorf("analysis.json server: %s", b)
	}
	withKV := *llama
	withKV.Series = append(withKV.Series, "llamacpp:kv_cache_usage_ratio")
	if e := serverEvidence(&withKV); e.MaxKVUsage != 0 {
		t.Errorf("an exposed KV usage of 0 is 0: %+v", e)
	}
	// levels.json from before max_running: the mean is all there is.
	old := &record.ServerStats{Samples: 3, MeanRunning: 8, MeanWaiting: 2, MaxWaiting: 2, Series: []string{"vllm:num_requests_running", "vllm:num_requests_waiting"}}
	if e := serverEvidence(old); e.MaxRunning.OK() || e.MeanRunning != 8 {
		t.Errorf("old levels.json: %+v", e)
	}
	// An analysis.json from before max_running reads it as null, not 0.
	var back ServerEvidence
	if err := json.Unmarshal([]byte(`{"mean_running":8,"mean_waiting":2,"max_kv_usage":0.5,"preemptions":0}`), &back); err != nil ||
		back.MaxRunning.OK() || back.MaxWaiting.OK() || back.MeanRunning != 8 || back.MaxKVUsage != 0.5 || back.Preemptions != 0 {
		t.Errorf("old analysis.json server: %+v, %v", back, err)
	}
	var tl TokenLengths
	if err := json.Unmarshal([]byte(`{"requested":64,"mean":null}`), &tl); err != nil || tl.Requested != 64 || tl.Mean.OK() || tl.P95.OK() {
		t.Errorf("token lengths: %+v, %v", tl, err)
	}
	if serverEvidence(nil) != nil || serverEvidence(&record.ServerStats{}) != nil {
		t.Error("no scrape in the window: want nil")
	}

	ls := groundTruth(4, []int{1, 2, 4, 8, 16}, 0, 1)
	for i := range ls {
		ls[i].Server = serverEvidence(llama)
	}
	r := Analyze(ls, Meta{}, fastOptions())
	if r.Knee == nil || !strings.Contains(r.Knee.Evidence, "mean running 3.9, mean waiting 11.0") || strings.Contains(r.Knee.Evidence, "KV") {
		t.Errorf("knee evidence %q", r.Knee.Evidence)
	}
}

// cappedLevels are ground-truth levels of a server with S slots whose metrics show
// min(c, running) requests running and the rest waiting.
func cappedLevels(S, running int, levels []int) []Level {
	ls := groundTruth(S, levels, 0, 1)
	for i := range ls {
		c := float64(ls[i].Concurrency)
		r := math.Min(c, float64(running))
		ls[i].Server = &ServerEvidence{MeanRunning: Float(r * 0.98), MaxRunning: Float(r), MeanWaiting: Float(c - r), MaxWaiting: Float(c - r + 1),
			MaxKVUsage: NaN(), Preemptions: NaN()}
	}
	return ls
}

// TestServerLimitOf: a limit the server states (the first of its settings that is a number)
// and one its metrics show (running flat at the cap while the waiting grows, at two levels
// or more).
func TestServerLimitOf(t *testing.T) {
	for _, tt := range []struct {
		settings map[string]string
		setting  string
		want     float64
	}{
		{map[string]string{"total_slots": "4"}, "total_slots", 4},
		{map[string]string{"max_num_seqs": "32"}, "max_num_seqs", 32},
		{map[string]string{"max_running_requests": "256", "max_total_num_tokens": "65536"}, "max_running_requests", 256},
		{map[string]string{"max_concurrent_requests": "128", "max_batch_total_tokens": "16000"}, "max_concurrent_requests", 128},
		{map[string]string{"max_running_requests": "None", "total_slots": "0"}, "", math.NaN()},
	} {
		lim := serverLimitOf(&record.ServerInfo{Engine: "x", Settings: tt.settings, From: "GET /x"}, nil)
		if math.IsNaN(tt.want) {
			if lim != nil {
				t.Errorf("%v: want no limit, got %+v", tt.settings, lim)
			}
			continue
		}
		if lim == nil || lim.Slots != Float(tt.want) || lim.Setting != tt.setting || lim.From != "GET /x" || lim.Observed.OK() {
			t.Errorf("%v: got %+v", tt.settings, lim)
		}
	}
	// llama-server -np 4 swept 1 … 16: at most 4 running, 4 then 12 waiting at 8 and 16.
	lim := serverLimitOf(nil, cappedLevels(4, 4, []int{1, 2, 4, 8, 16}))
	if lim == nil || lim.Slots != 4 || lim.Observed != 4 || lim.Stated.OK() || len(lim.CappedAt) != 2 || lim.CappedAt[1] != 16 || lim.MaxWaiting != 12 {
		t.Fatalf("observed: %+v", lim)
	}
	want := "its metrics: at most 4 running while the mean waiting grew to 12, at concurrency 8, 16"
	if d := lim.Describe(); d != want {
		t.Errorf("Describe %q, want %q", d, want)
	}
	// The metrics' cap is what bound; the stated limit is named beside it.
	lim = serverLimitOf(&record.ServerInfo{Settings: map[string]string{"total_slots": "16"}, From: "GET /props"}, cappedLevels(4, 4, []int{1, 2, 4, 8, 16}))
	if lim.Slots != 4 || lim.Stated != 16 || !strings.HasPrefix(lim.Describe(), "total_slots 16, GET /props; its metrics: at most 4 running") {
		t.Errorf("stated and observed: %+v, %q", lim, lim.Describe())
	}
	// Only one queued level, a running count that is not flat, or waiting that does not grow:
	// no cap is seen.
	if lim := serverLimitOf(nil, cappedLevels(4, 4, []int{1, 2, 4, 8})); lim != nil {
		t.Errorf("one queued level: %+v", lim)
	}
	ls := cappedLevels(4, 4, []int{1, 2, 4, 8, 16})
	ls[4].Server.MaxRunning, ls[4].Server.MeanRunning = 6, 5.9
	if lim := serverLimitOf(nil, ls); lim != nil {
		t.Errorf("running 4 then 6: %+v", lim)
	}
	ls = cappedLevels(4, 4, []int{1, 2, 4, 8, 16})
	ls[4].Server.MeanWaiting = ls[3].Server.MeanWaiting
	if lim := serverLimitOf(nil, ls); lim != nil {
		t.Errorf("waiting flat: %+v", lim)
	}
}

// TestCheckServerLimit: the batch model's slot limit S and the headline knee are compared with
// the server's limit; more than 25% apart is a warning naming both. Ground truth S = 32 (the
// demo engine): the fit finds S = 32, and the knee is S too (the plateau onset, DESIGN §4.3).
func TestCheckServerLimit(t *testing.T) {
	levels := geometricLevels(128)
	info := func(k, v string) Meta {
		return Meta{Server: &record.ServerInfo{Engine: server.SimEngine, Settings: map[string]string{k: v}, From: "GET /version"}}
	}
	r := Analyze(groundTruth(32, levels, 0, 1), info("max_num_seqs", "32"), fastOptions())
	if r.ServerLimit == nil || r.ServerLimit.Slots != 32 || hasWarning(r, "server evidence") {
		t.Fatalf("S = 32 against max_num_seqs 32: limit %+v, warnings %q", r.ServerLimit, r.Warnings)
	}
	if r.Throughput.Batch == nil || math.Abs(float64(r.Throughput.Batch.Limit)-32) > 1 || r.Knee == nil {
		t.Fatalf("ground truth fit: batch %+v, knee %+v", r.Throughput.Batch, r.Knee)
	}
	// A server that says 16 slots: S = 32 and the knee (S) are more than 25% above it.
	r = Analyze(groundTruth(32, levels, 0, 1), info("max_num_seqs", "16"), fastOptions())
	for _, want := range []string{
		"server evidence: the batch-model slot limit S at concurrency 32 is 100% above the server's limit of 16 requests at once (max_num_seqs 16, GET /version), more than 25% apart: the server runs no more than that at once",
		"server evidence: the headline knee (" + r.Knee.Method.Label() + " fit) at concurrency 32 is 100% above",
	} {
		if !hasWarning(r, want) {
			t.Errorf("want a warning %q, got %q", want, r.Warnings)
		}
	}
	// 64 slots: the plateau from 32 is measured (levels to 128): saturation before the slots.
	r = Analyze(groundTruth(32, levels, 0, 1), info("total_slots", "64"), fastOptions())
	if !hasWarning(r, "the batch-model slot limit S at concurrency 32 is 50% below the server's limit of 64 requests at once (total_slots 64, GET /version), more than 25% apart: throughput stops growing before the server's slots are full") {
		t.Errorf("S below the limit: %q", r.Warnings)
	}
	// A sweep that ends below the limit (S at the largest level: no plateau measured) is no
	// disagreement.
	r = Analyze(groundTruth(256, levels, 0, 1), info("max_num_seqs", "256"), fastOptions())
	if hasWarning(r, "the batch-model slot limit S") {
		t.Errorf("no plateau measured: %q", r.Warnings)
	}
	// The llama.cpp run: a fit claiming S = 16 beside metrics showing at most 4
	// running while the mean waiting grew to 12.
	r = Analyze(cappedLevels(16, 4, []int{1, 2, 4, 8, 16, 32}), Meta{}, fastOptions())
	if r.ServerLimit == nil || r.ServerLimit.Observed != 4 ||
		!hasWarning(r, "server evidence: the batch-model slot limit S at concurrency 16 is 300% above the server's limit of 4 requests at once (its metrics: at most 4 running while the mean waiting grew to 28, at concurrency 8, 16, 32)") {
		t.Errorf("observed cap 4 vs S 16: limit %+v, warnings %q", r.ServerLimit, r.Warnings)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"server_limit":{"slots":4,"stated":null,"observed":4,"capped_at":[8,16,32],"max_waiting":28}`) {
		t.Errorf("analysis.json server_limit: %s", b)
	}
}
