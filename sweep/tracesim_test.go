package sweep_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// traceSample is a Mooncake trace of 30 requests over 1.45 s (gaps 50 ms; every third
// request shares the first two blocks, hash ids 0 and 1, of 2 tokens): 20 requests/s at
// scale 1 (a pass of 1.45 s + one mean gap of 50 ms = 1.5 s, 30 ÷ 1.5 s). Lengths
// vary with the row: input 6 + row mod 9 tokens, output 2 + row mod 5.
func traceSample() string {
	var b strings.Builder
	for i := range 30 {
		ids := fmt.Sprintf("[%d, %d, %d]", 100+3*i, 101+3*i, 102+3*i)
		if i%3 == 0 {
			ids = fmt.Sprintf("[0, 1, %d]", 100+3*i)
		}
		fmt.Fprintf(&b, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": %d, \"hash_ids\": %s}\n", 50*i, 6+i%9, 2+i%5, ids)
	}
	return b.String()
}

// sampleTrace returns traceSample as a trace of 2-token blocks and its workload for api (seed
// 3).
func sampleTrace(t *testing.T, api record.API) (*workload.Trace, *workload.TraceWorkload) {
	t.Helper()
	tf, err := workload.ParseTrace(strings.NewReader(traceSample()), "sample.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := workload.NewTrace(tf, workload.TraceConfig{File: "sample.jsonl", BlockTokens: 2})
	if err != nil {
		t.Fatal(err)
	}
	w, err := workload.NewTraceWorkload(workload.WorkloadConfig{Seed: 3}, api, tr)
	if err != nil {
		t.Fatal(err)
	}
	return tr, w
}

// TestTraceReplay runs a trace sweep at time scales 4 and 8 against the fixed-mode
// simulator (TTFT 5 ms, ITL 1 ms: far below capacity) and checks every level's records: each
// arrival k is the trace's request k mod 30 of pass k div 30, scheduled (pass × 1.5 s + its
// recorded time) ÷ scale after the first (within 1 ns of rounding), with the recorded input
// length in words (the simulator counts words: usage.prompt_tokens equals it) and output
// length (max_tokens with ignore_eos: the simulator generates exactly it); and the requests
// sharing hash ids 0 and 1 in a pass of a level start with the same 1 + 2 × 2 words, which another
// level's do not.
func TestTraceReplay(t *testing.T) {
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	tr, w := sampleTrace(t, record.APIChat)
	if tr.Pass() != 1500*time.Millisecond || tr.Info.MeanRPS != 20 {
		t.Fatalf("pass %v, mean %v requests/s: want 1.5 s, 20", tr.Pass(), tr.Info.MeanRPS)
	}
	scales := []float64{4, 8}
	proto := sweep.Protocol{Warmup: 100 * time.Millisecond, WarmupMax: 5 * time.Second, Duration: 400 * time.Millisecond,
		MaxDuration: 400 * time.Millisecond, MinRequests: 1, CITarget: 1, DrainTimeout: 5 * time.Second}
	plan := sweep.Plan{Rates: []float64{tr.Rate(4), tr.Rate(8)}, Trace: tr, Protocol: proto, Workload: w}
	sink := &memSink{}
	if _, err := sweep.Run(context.Background(), context.Background(), plan, newClient(t, url, 64), sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.runs) != 2 {
		t.Fatalf("%d levels, want 2", len(sink.runs))
	}
	prefixes := map[int]string{}
	for li, run := range sink.runs {
		s := scales[li]
		if run.TimeScale != s || run.OfferedRPS != 20*s {
			t.Errorf("level %d: time scale %v offering %v requests/s, want %v and %v", li, run.TimeScale, run.OfferedRPS, s, 20*s)
		}
		recs := slices.Clone(sink.records[li])
		slices.SortFunc(recs, func(a, b record.Record) int { return a.Seq - b.Seq })
		if len(recs) <= tr.Len() {
			t.Fatalf("level %d: %d records, want more than a pass", li, len(recs))
		}
		t0 := recs[0].Scheduled
		for k, r := range recs {
			e := tr.Entry(k % tr.Len())
			in, out := int(e.InputTokens), int(e.OutputTokens)
			want := (float64(k/tr.Len())*float64(tr.Pass()) + float64(e.At)) / s
			if r.Seq != k || math.Abs(float64(r.Scheduled-t0)-want) > 1 {
				t.Fatalf("level %d arrival %d (seq %d): scheduled %v after the first, want %v", li, k, r.Seq, time.Duration(r.Scheduled-t0), time.Duration(want))
			}
			if !r.OK() {
				continue
			}
			if r.RequestedPromptTokens != in || r.PromptTokens != in ||
				r.RequestedOutputTokens != out || r.OutputTokens != out {
				t.Errorf("level %d arrival %d: prompt %d (asked %d), output %d (asked %d): want %d and %d",
					li, k, r.PromptTokens, r.RequestedPromptTokens, r.OutputTokens, r.RequestedOutputTokens, in, out)
			}
		}
	}
	// The prompts: hash ids 0 and 1 (requests 0, 3, 6 …) are the same 1 + 2 × 2 words within a
	// pass of a level, and differ between levels.
	for li := range 2 {
		for _, seq := range []int{0, 3, 27} {
			p := strings.Fields(w.Next(li, 0, seq).Prompt)
			head := strings.Join(p[:5], " ")
			if was, ok := prefixes[li]; ok && was != head {
				t.Errorf("level %d request %d: shared blocks %q, request 0 had %q", li, seq, head, was)
			}
			prefixes[li] = head
		}
		if other := strings.Join(strings.Fields(w.Next(li, 0, 1).Prompt)[:5], " "); other == prefixes[li] {
			t.Errorf("level %d: request 1 (no shared ids) starts like the shared blocks", li)
		}
	}
	if prefixes[0] == prefixes[1] {
		t.Errorf("levels 0 and 1 share their blocks' text %q", prefixes[0])
	}
}

// rampTrace is a Mooncake trace of 60 requests whose rate ramps linearly from 20 to 220
// requests/s over 0.5 s: N(t) = 20t + 200t², request i at t_i = (−20 + √(400 + 800 i)) ÷ 400
// s; a pass lasts 0.5 s + one mean gap (t_59 ÷ 59), about 0.507 s. Every request asks 4
// tokens for 3.
func rampTrace(t *testing.T) *workload.Trace {
	var b strings.Builder
	for i := range 60 {
		at := (-20 + math.Sqrt(400+800*float64(i))) / 400
		fmt.Fprintf(&b, "{\"timestamp\": %.3f, \"input_length\": 4, \"output_length\": 3}\n", at*1000)
	}
	tf, err := workload.ParseTrace(strings.NewReader(b.String()), "ramp.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := workload.NewTrace(tf, workload.TraceConfig{File: "ramp.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// TestTraceRampLevel replays a ramping trace (rampTrace: 20 → 220 requests/s) at scales 1
// and 2 against the fixed-mode simulator (TTFT 5 ms, ITL 1 ms: about 8 ms a request, a
// couple in flight at most, far below capacity) with duration 300 ms and max_duration
// 800 ms. Review finding 3: each level's window is a whole number of passes P = Pass ÷ s
// (⌈300 ms ÷ P⌉ passes: one of 507 ms at 1×, two of 253 ms at 2×), at least P, within 2 ms
// of the window's tick. Finding 2: the ramp is the trace's own shape, not judged by the
// steady-state test: the levels are steady, and the analysis calls them sustainable and
// valid, judged by their backlog — also a level recorded as failing the trend test (trend
// p = 0.001, as the reviewer's ramping trace).
func TestTraceRampLevel(t *testing.T) {
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	tr := rampTrace(t)
	w, err := workload.NewTraceWorkload(workload.WorkloadConfig{Seed: 5}, record.APIChat, tr)
	if err != nil {
		t.Fatal(err)
	}
	proto := sweep.Protocol{Warmup: 50 * time.Millisecond, WarmupMax: 5 * time.Second, Duration: 300 * time.Millisecond,
		MaxDuration: 800 * time.Millisecond, MinRequests: 1, CITarget: 0.05, DrainTimeout: 5 * time.Second}
	plan := sweep.Plan{Rates: []float64{tr.Rate(1), tr.Rate(2)}, Trace: tr, Protocol: proto, Workload: w}
	sink := &memSink{}
	if _, err := sweep.Run(context.Background(), context.Background(), plan, newClient(t, url, 64), sink); err != nil {
		t.Fatal(err)
	}
	var levels []record.Level
	for li, run := range sink.runs {
		s := []float64{1, 2}[li]
		pass := float64(tr.Pass()) / s
		win := float64(run.W1 - run.W0)
		k := math.Round(win / pass)
		if k < 1 || math.Abs(win-k*pass) > 2e6 || k != math.Ceil(float64(proto.Duration)/pass) {
			t.Errorf("scale %v: window %v = %.3f passes of %v: want ⌈300 ms ÷ pass⌉ whole passes", s, time.Duration(win), win/pass, time.Duration(pass))
		}
		if !run.Steady {
			t.Errorf("scale %v: not steady (%s, trend p %.3g): a trace level's trend is the trace's", s, run.NotSteadyReason, run.TrendP)
		}
		levels = append(levels, record.Level{Run: run, Records: sink.records[li]})
	}
	// A level recorded before the runner skipped the trend test (steady false, the
	// steady-state test failed) is judged by its backlog too.
	old := levels[0]
	old.Run.Steady, old.Run.NotSteadyReason, old.Run.TrendP = false, "the steady-state test failed (no material trend; a change of at most 5.0% across the window)", 0.001
	levels = append(levels, old)
	for i, lv := range analysis.Summarize(levels, analysis.DefaultOptions()) {
		// A client-bound level (the machine busy with other work) is invalid for that reason,
		// which is not the one under test; a client starved enough to let its own backlog grow
		// (its sends late behind the schedule) leaves the level inconclusive.
		if lv.ClientBound {
			t.Logf("level %d: client-bound, inconclusive (notes %q)", i, lv.Notes)
			continue
		}
		if !lv.Sustainable || !lv.Valid {
			t.Errorf("level %d: valid %v, sustainable %v: want both (notes %q)", i, lv.Valid, lv.Sustainable, lv.Notes)
		}
	}
}
