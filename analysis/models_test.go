package analysis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/gonum/floats/scalar"

	"github.com/kneecap/kneecap/record"
)

// TestByModelHandMade: handLevel's records split between models a and b are summarised per
// model by the level's own arithmetic (TestSummarizeHandMade): a has the 12 s request (TTFT
// 1 s, TPOT 0.6 s, E2E 4 s) and the warmup one, whose 6 tokens inside the window count
// toward its output TPS ((6 + 6) ÷ 10 s = 1.2); b has the 18 s request (TPOT 1 s, one token
// inside: 0.1/s) and the failure. Shares are of the level's 3 requests; the models' output
// TPS add up to the level's 1.3. Records without a model give no by_model key.
func TestByModelHandMade(t *testing.T) {
	run, recs := handLevel()
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if lv.ByModel != nil {
		t.Fatalf("no models: by_model %+v, want none", lv.ByModel)
	}
	if b, _ := json.Marshal(lv); strings.Contains(string(b), "by_model") {
		t.Errorf("no models: analysis.json level has by_model: %s", b)
	}
	for i, m := range []string{"a", "a", "b", "b", "a"} {
		recs[i].Model = m
	}
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if len(lv.ByModel) != 2 || lv.ByModel[0].Model != "a" || lv.ByModel[1].Model != "b" {
		t.Fatalf("by_model %+v, want a then b", lv.ByModel)
	}
	a, b := lv.ByModel[0], lv.ByModel[1]
	if a.Requests != 1 || a.Errors != 0 || b.Requests != 2 || b.Errors != 1 {
		t.Errorf("requests/errors a %d/%d b %d/%d, want 1/0 and 2/1", a.Requests, a.Errors, b.Requests, b.Errors)
	}
	for _, c := range []struct {
		name      string
		got       Float
		want, tol float64
	}{
		{"a share", a.Share, 1.0 / 3, 1e-12}, {"b share", b.Share, 2.0 / 3, 1e-12},
		{"a ttft p50", a.TTFTP50, 1000, 1e-12}, {"a ttft p95", a.TTFTP95, 1000, 1e-12},
		{"a tpot p50", a.TPOTP50, 600, 1e-9}, {"b tpot p95", b.TPOTP95, 1000, 1e-9},
		{"a e2e p95", a.E2EP95, 4000, 1e-12}, {"b e2e p95", b.E2EP95, 4000, 1e-12},
		{"a output tps", a.OutputTPS, 1.2, 1e-12}, {"b output tps", b.OutputTPS, 0.1, 1e-12},
		{"sum of the models' output tps", a.OutputTPS + b.OutputTPS, float64(lv.OutputTPS), 1e-12},
	} {
		if !scalar.EqualWithinAbsOrRel(float64(c.got), c.want, c.tol, c.tol) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
}

// mixLevel is a level at concurrency c whose models base and lora have TTFT p95 of baseMS and
// loraMS, n successful requests each.
func mixLevel(c int, baseMS, loraMS float64, n int) Level {
	lv := Level{Concurrency: c, Valid: true, OutputTPS: 100, Requests: 2 * n, TTFT: NoLatency(), TPOT: NoLatency(), E2E: NoLatency(), ITL: NoLatency(), TTFA: NoLatency()}
	lv.ByModel = []ModelStats{
		{Model: "base", Requests: n, Share: 0.5, TTFTP95: Float(baseMS)},
		{Model: "lora", Requests: n, Share: 0.5, TTFTP95: Float(loraMS)},
	}
	return lv
}

// TestModelSlowerWarning: one warning names the levels where lora's TTFT p95 is more than 2×
// base's, both values at each; a ratio of exactly 2, a level with fewer than 20 successful
// requests of a model, and a superseded level are not named; a run without a mix has none.
func TestModelSlowerWarning(t *testing.T) {
	thin := mixLevel(64, 10, 90, 19)
	old := mixLevel(16, 10, 90, 100)
	old.Superseded = true
	levels := []Level{mixLevel(1, 10, 35, 100), mixLevel(2, 12, 24, 100), mixLevel(4, 20, 41, 100), old, thin}
	res := Analyze(levels, Meta{}, DefaultOptions())
	var mix []string
	for _, w := range res.Warnings {
		if strings.HasPrefix(w, "model mix:") {
			mix = append(mix, w)
		}
	}
	want := `model mix: model "lora"'s TTFT p95 is more than 2× model "base"'s at concurrency 1 (35.0 ms vs 10.0 ms), 4 (41.0 ms vs 20.0 ms)`
	if len(mix) != 1 || !strings.HasPrefix(mix[0], want) {
		t.Fatalf("mix warnings %q, want one starting %q", mix, want)
	}
	plain := []Level{mixLevel(1, 10, 35, 100)}
	plain[0].ByModel = nil
	for _, w := range Analyze(plain, Meta{}, DefaultOptions()).Warnings {
		if strings.HasPrefix(w, "model mix:") {
			t.Errorf("no mix: warning %q", w)
		}
	}
}

// TestByModelEmbeddings: an embeddings level's by_model is measured by its yardstick: each
// model's input tokens/s (4 workers × 100 tokens × the answers completed inside the 1 s
// window: 99 for base at 10 ms, 24 for lora at 40 ms, the last ending on the window's
// edge) and latency p50/p95, without the
// TTFT, TPOT and output TPS keys; lora's latency p95, 4× base's, is warned of in latency's
// words.
func TestByModelEmbeddings(t *testing.T) {
	const w0 = int64(1e18)
	base := embedRecords(4, 200, 10*time.Millisecond, 2, 100, w0)
	lora := embedRecords(4, 50, 40*time.Millisecond, 2, 100, w0)
	for i := range base {
		base[i].Model, base[i].Concurrency = "base", 8
	}
	for i := range lora {
		lora[i].Model, lora[i].Concurrency, lora[i].Worker = "lora", 8, lora[i].Worker+4
	}
	run := record.LevelRun{Index: 0, Concurrency: 8, W0: w0, W1: w0 + int64(time.Second), Steady: true}
	opts := DefaultOptions()
	opts.API = record.APIEmbeddings
	lv := Summarize([]record.Level{{Run: run, Records: append(base, lora...)}}, opts)[0]
	if len(lv.ByModel) != 2 {
		t.Fatalf("by_model %+v, want base and lora", lv.ByModel)
	}
	for i, want := range []struct {
		tps, p50 float64
	}{{4 * 100 * 99, 10}, {4 * 100 * 24, 40}} {
		m := lv.ByModel[i]
		if !scalar.EqualWithinRel(float64(m.InputTPS), want.tps, 1e-9) || float64(m.E2EP50) != want.p50 || float64(m.E2EP95) != want.p50 {
			t.Errorf("%s: input TPS %v, latency p50 %v p95 %v; want %v, %v ms", m.Model, m.InputTPS, m.E2EP50, m.E2EP95, want.tps, want.p50)
		}
	}
	b, err := json.Marshal(lv.ByModel)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"ttft_p50_ms"`, `"ttft_p95_ms"`, `"tpot_p50_ms"`, `"tpot_p95_ms"`, `"output_tps"`} {
		if strings.Contains(string(b), k) {
			t.Errorf("embeddings by_model has %s: %s", k, b)
		}
	}
	for _, k := range []string{`"input_tps"`, `"e2e_p50_ms"`, `"e2e_p95_ms"`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("embeddings by_model lacks %s: %s", k, b)
		}
	}
	res := Analyze([]Level{lv}, Meta{API: record.APIEmbeddings}, opts)
	want := `model mix: model "lora"'s latency p95 is more than 2× model "base"'s at concurrency 8 (40.0 ms vs 10.0 ms)`
	if !strings.Contains(strings.Join(res.Warnings, "\n"), want) {
		t.Errorf("warnings %q\nlack %q", res.Warnings, want)
	}
}
