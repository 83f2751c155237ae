package summary

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
)

// sampleLevels is a plateauing curve (the simulator's ground truth with S = 8, step time
// 4 ms + 250 µs·b, 128 output tokens) with one level marked invalid.
func sampleLevels() []analysis.Level {
	var out []analysis.Level
	for _, c := range []int{1, 2, 4, 8, 16, 32, 64} {
		b := min(c, 8)
		step := 4e-3 + 250e-6*float64(b)
		tps := float64(b) / step
		e2e := float64(c) / float64(b) * 128 * step
		ttft := step + e2e - 128*step
		lv := newLevel()
		lv.Concurrency = c
		lv.OutputTPS = analysis.Float(tps)
		lv.OutputTPSCI95 = analysis.Float(tps * 0.01)
		lv.QPS = analysis.Float(tps / 128)
		lv.Requests = 100 * c
		lv.Errors = c / 16
		lv.ErrorRate = analysis.Float(float64(lv.Errors) / float64(lv.Requests))
		lv.AchievedConcurrency = analysis.Float(c)
		lv.TTFT = analysis.Latency{Mean: analysis.Float(ttft * 1e3), P50: analysis.Float(ttft * 1e3), P90: analysis.Float(ttft * 1.1e3), P95: analysis.Float(ttft * 1.15e3), P99: analysis.Float(ttft * 1.3e3)}
		lv.TPOT = analysis.Latency{Mean: analysis.Float(step * 1e3), P50: analysis.Float(step * 1e3), P90: analysis.NaN(), P95: analysis.Float(step * 1.05e3), P99: analysis.Float(step * 1.1e3)}
		lv.E2E = analysis.Latency{Mean: analysis.Float(e2e * 1e3), P50: analysis.Float(e2e * 1e3), P90: analysis.Float(e2e * 1.02e3), P95: analysis.Float(e2e * 1.05e3), P99: analysis.Float(e2e * 1.1e3)}
		out = append(out, lv)
	}
	out[6].Valid = false
	out[6].Notes = []string{"invalid: marked invalid in levels.csv"}
	// Token lengths: prompts of 64 tokens counted as ~247 (a sub-word tokenizer), fixed
	// outputs of 128; the last level measured without them (null).
	for i := range out[:6] {
		out[i].InputTokens = analysis.TokenLengths{Requested: 64, Mean: 247.25, P50: 247, P95: 251.5}
		out[i].OutputTokens = analysis.TokenLengths{Requested: 128, Mean: 128, P50: 128, P95: 128}
		out[i].MeanOutputTokens = 128
		out[i].FixedOutput = true
	}
	// An added level (sweep.refine): its reason, commas and quotes included, round-trips.
	out[3].Refine = `knee ≈ 6.54 lies between levels 4 and 8, "quoted"`
	return out
}

// WriteCSV → ReadCSV gives the same levels and the same analysis.
func TestCSVRoundTrip(t *testing.T) {
	in := sampleLevels()
	// A level kept though imprecise stays valid when re-read; a rising one keeps its
	// evidence (issue 22: the verdict columns).
	in[0].Steady, in[0].Imprecise = false, true
	in[1].LatencyRising = true
	_, out := roundTrip(t, in)
	if len(out) != len(in) {
		t.Fatalf("%d levels, want %d", len(out), len(in))
	}
	if out[3].Refine != in[3].Refine || out[2].Refine != "" {
		t.Errorf("refine %q / %q after the round trip, want %q / \"\"", out[3].Refine, out[2].Refine, in[3].Refine)
	}
	for i := range in {
		a, b := in[i], out[i]
		if !reflect.DeepEqual(jsonOf(t, a), jsonOf(t, b)) {
			t.Errorf("level %d:\n in  %s\n out %s", i, jsonOf(t, a), jsonOf(t, b))
		}
	}
	if out[0].InputTokens != in[0].InputTokens || out[0].OutputTokens != in[0].OutputTokens || !out[0].FixedOutput || out[6].FixedOutput {
		t.Errorf("token lengths after the round trip: %+v %+v %v", out[0].InputTokens, out[0].OutputTokens, out[0].FixedOutput)
	}
	opts := analysis.DefaultOptions()
	opts.Bootstrap = 50
	ra, rb := analysis.Analyze(in, analysis.Meta{}, opts), analysis.Analyze(out, analysis.Meta{}, opts)
	if ra.Knee == nil || rb.Knee == nil || ra.Knee.Concurrency != rb.Knee.Concurrency || ra.Knee.Interval != rb.Knee.Interval {
		t.Errorf("knee differs after the round trip: %+v vs %+v", ra.Knee, rb.Knee)
	}
	if !reflect.DeepEqual(ra.Warnings, rb.Warnings) || !strings.Contains(strings.Join(rb.Warnings, "\n"), "prompt length: ") {
		t.Errorf("warnings differ after the round trip, or the prompt-length warning is lost:\n%q\n%q", ra.Warnings, rb.Warnings)
	}
}

// TestReadCSVOldColumns: a summary.csv from before the token-length columns reads as before;
// its mean_output_tokens is the mean output length counted (one quantity), and nothing says
// what was requested.
func TestReadCSVOldColumns(t *testing.T) {
	in := "concurrency,output_tps,mean_output_tokens,refine\n1,100,127.5,\n"
	lv, err := ReadCSV(strings.NewReader(in), "old.csv")
	if err != nil {
		t.Fatal(err)
	}
	l := lv[0]
	if l.OutputTokens.Mean != 127.5 || l.OutputTokens.Requested.OK() || l.InputTokens.Mean.OK() || l.FixedOutput {
		t.Errorf("old file: input %+v, output %+v, fixed %v", l.InputTokens, l.OutputTokens, l.FixedOutput)
	}
	in = "concurrency,output_tps,output_tokens_requested,output_tokens_mean,fixed_output\n1,100,128,40,true\n"
	if lv, err = ReadCSV(strings.NewReader(in), "new.csv"); err != nil || lv[0].MeanOutputTokens != 40 || !lv[0].FixedOutput || lv[0].OutputTokens.Requested != 128 {
		t.Errorf("new columns: %v %+v", err, lv)
	}
}

func jsonOf(t *testing.T, l analysis.Level) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteCSV(&b, []analysis.Level{l}); err != nil {
		t.Fatal(err)
	}
	return b.String() + strings.Join(l.Notes, ";")
}

// The DESIGN §4 minimal table: only the required and a few optional columns.
func TestReadCSVSubset(t *testing.T) {
	in := "# published table\nconcurrency, output_tps, ttft_p95_ms, error_rate\n1,100,120,0\n2,190,,0.01\n"
	lv, err := ReadCSV(strings.NewReader(in), "t.csv")
	if err != nil {
		t.Fatal(err)
	}
	if len(lv) != 2 || lv[1].Concurrency != 2 || lv[1].OutputTPS != 190 || lv[1].TTFT.P95.OK() || lv[0].TTFT.P95 != 120 ||
		lv[1].ErrorRate != 0.01 || !lv[0].Valid || !lv[0].Steady || lv[0].QPS.OK() {
		t.Errorf("levels = %+v", lv)
	}
}

func TestReadCSVErrors(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"unknown column", "concurrency,output_tps,tps_magic\n1,2,3\n", []string{"x.csv:1", `"tps_magic"`, "unknown column"}},
		{"non-numeric", "concurrency,output_tps\n1,100\n2,fast\n", []string{"x.csv:3", `"output_tps"`, "not a number"}},
		{"concurrency zero", "concurrency,output_tps\n0,100\n", []string{"x.csv:2", `"concurrency"`, "positive integer"}},
		{"concurrency negative", "output_tps,concurrency\n100,-4\n", []string{"x.csv:2", `"concurrency"`}},
		{"concurrency fractional", "concurrency,output_tps\n1.5,100\n", []string{"x.csv:2", `"concurrency"`}},
		{"missing required", "concurrency,qps\n1,2\n", []string{"x.csv:1", `"output_tps"`, "required"}},
		{"empty required", "concurrency,output_tps\n1,\n", []string{"x.csv:2", `"output_tps"`, "empty"}},
		{"repeated", "concurrency,output_tps,qps,qps\n1,2,3,4\n", []string{"x.csv:1", `"qps"`, "repeated"}},
		{"nan", "concurrency,output_tps\n1,NaN\n", []string{"x.csv:2", `"output_tps"`, "not finite"}},
		{"negative tps", "concurrency,output_tps\n1,-3\n", []string{"x.csv:2", `"output_tps"`, "negative"}},
		{"error rate > 1", "concurrency,output_tps,error_rate\n1,3,5\n", []string{"x.csv:2", `"error_rate"`}},
		{"bad bool", "concurrency,output_tps,valid\n1,3,maybe\n", []string{"x.csv:2", `"valid"`}},
		{"bad fixed_output", "concurrency,output_tps,fixed_output\n1,3,yes\n", []string{"x.csv:2", `"fixed_output"`}},
		{"negative length", "concurrency,output_tps,input_tokens_p95\n1,3,-1\n", []string{"x.csv:2", `"input_tokens_p95"`, "negative"}},
		{"cell count", "concurrency,output_tps\n1,3,4\n", []string{"x.csv:2", "number of cells"}},
		{"empty", "", []string{"x.csv", "empty"}},
		{"header only", "concurrency,output_tps\n", []string{"x.csv", "no level rows"}},
		{"bad quote", "concurrency,output_tps\n1,\"3\n", []string{"x.csv:2"}},
	}
	for _, tt := range tests {
		_, err := ReadCSV(strings.NewReader(tt.in), "x.csv")
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q lacks %q", tt.name, err, w)
			}
		}
	}
}

// FuzzReadCSV: ReadCSV never panics, and what it accepts writes and reads back the same.
// Seeds live in testdata/fuzz/FuzzReadCSV.
func FuzzReadCSV(f *testing.F) {
	f.Add("concurrency,output_tps\n1,100\n2,180\n")
	f.Fuzz(func(t *testing.T, in string) {
		levels, err := ReadCSV(strings.NewReader(in), "fuzz.csv")
		if err != nil {
			return
		}
		for _, l := range levels {
			if l.Concurrency <= 0 || !l.OutputTPS.OK() {
				t.Fatalf("accepted a level with concurrency %d, output_tps %v", l.Concurrency, l.OutputTPS)
			}
		}
		var buf bytes.Buffer
		if err := WriteCSV(&buf, levels); err != nil {
			t.Fatal(err)
		}
		again, err := ReadCSV(&buf, "again.csv")
		if err != nil {
			t.Fatalf("re-reading written CSV: %v", err)
		}
		if len(again) != len(levels) {
			t.Fatalf("%d levels after the round trip, want %d", len(again), len(levels))
		}
		analysis.Analyze(levels, analysis.Meta{}, analysis.Options{Bootstrap: 5})
	})
}

func TestFuzzSeedsCommitted(t *testing.T) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "fuzz", "FuzzReadCSV", "*"))
	if len(seeds) < 3 {
		t.Errorf("%d committed FuzzReadCSV seeds, want ≥ 3", len(seeds))
	}
	for _, s := range seeds {
		if _, err := os.ReadFile(s); err != nil {
			t.Error(err)
		}
	}
	_ = math.NaN
}

// TestReadCSVDuplicateLevel: two rows at one concurrency are refused, naming both lines (a
// comment line counts); before, the headline came from whichever the analysis kept.
func TestReadCSVDuplicateLevel(t *testing.T) {
	in := "concurrency,output_tps\n1,100\n# rerun\n4,300\n2,180\n4,320\n"
	_, err := ReadCSV(strings.NewReader(in), "x.csv")
	want := `x.csv:6: column "concurrency": 4 again (first on line 4): one row per level`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("ReadCSV = %v, want %q", err, want)
	}
}
