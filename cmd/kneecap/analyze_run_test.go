package main

// `kneecap analyze` of results directories: a run's records re-summarized against the
// simulator's ground truth, and the committed sample run (examples/sample-run) that has only
// its summary.csv.

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
)

// writeGroundTruthRun writes a results directory of a closed-loop sweep against the
// simulator's ground truth (DESIGN §6): S slots, step t(b) = 4 ms + 250 µs·b, 64 output tokens
// per request in 64 chunks. Every worker sends back to back, so Little's law holds exactly.
func writeGroundTruthRun(t *testing.T, dir string, S int, levels []int) {
	t.Helper()
	const outTok = 64
	cfg := config.Config{Name: "ground-truth", Target: config.TargetConfig{Model: "sim"}}
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d, err := rundir.Create(dir, cfg, "http://127.0.0.1:0/v1", start)
	if err != nil {
		t.Fatal(err)
	}
	t0 := start.UnixNano()
	for li, c := range levels {
		b := min(c, S)
		step := time.Duration(4*time.Millisecond + time.Duration(b)*250*time.Microsecond)
		e2e := time.Duration(float64(c) / float64(b) * outTok * float64(step))
		ttft := e2e - (outTok-1)*step
		warm, window := int64(2*e2e), int64(10*time.Second)
		run := record.LevelRun{Index: li, Concurrency: c, WarmupStart: t0, W0: t0 + warm, W1: t0 + warm + window,
			Steady: true, Slices: 10}
		var recs []record.Record
		for w := range c {
			sent := t0 + int64(w)*int64(e2e)/int64(c)
			for seq := 0; sent < run.W1; seq++ {
				phase := record.PhaseMeasure
				if sent < run.W0 {
					phase = record.PhaseWarmup
				}
				chunks := make([]int64, outTok)
				for j := range chunks {
					chunks[j] = int64(ttft+time.Duration(j)*step) / 1e3
				}
				recs = append(recs, record.Record{Level: li, Concurrency: c, Worker: w, Seq: seq, Phase: phase, Sent: sent,
					TTFT: ttft, E2E: e2e, Chunks: chunks, PromptTokens: 256, OutputTokens: outTok, TokensSource: record.TokensFromUsage,
					Status: record.StatusOK})
				sent += int64(e2e)
			}
		}
		run.DrainEnd = sent(recs)
		if err := d.LevelDone(record.Level{Run: run, Records: recs}); err != nil {
			t.Fatal(err)
		}
		t0 = run.DrainEnd + int64(time.Second)
	}
	if err := d.Finish(sweep.StopDone); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
}

func sent(recs []record.Record) int64 {
	var end int64
	for i := range recs {
		end = max(end, recs[i].Done())
	}
	return end
}

// `analyze RUN_DIR` re-summarizes the records: every level is valid (achieved concurrency and
// Little's law exact), TPS matches b ÷ t(b), and the knee and TTFT blow-up land near S.
func TestAnalyzeResultsDir(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	const S = 8
	writeGroundTruthRun(t, dir, S, []int{1, 2, 4, 8, 16, 32, 64})
	e, _, stderr := analyzeEnv()
	if err := run(context.Background(), e, []string{"analyze", dir, "--slo-ttft-p95", "1s", "--bootstrap", "50"}); err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var res analysis.Result
	b, err := os.ReadFile(filepath.Join(dir, "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Levels) != 7 || res.Meta.Name != "ground-truth" || res.Meta.Date != "2026-01-02T03:04:05Z" {
		t.Fatalf("levels %d meta %+v", len(res.Levels), res.Meta)
	}
	for _, l := range res.Levels {
		bb := float64(min(l.Concurrency, S))
		want := bb / (4e-3 + 250e-6*bb)
		if !l.Valid || math.Abs(float64(l.OutputTPS)/want-1) > 0.02 || math.Abs(float64(l.AchievedConcurrency)/float64(l.Concurrency)-1) > 0.01 {
			t.Errorf("level %d: valid %v tps %.1f (want %.1f) achieved %.2f notes %q", l.Concurrency, l.Valid, float64(l.OutputTPS), want, float64(l.AchievedConcurrency), l.Notes)
		}
	}
	if res.Knee == nil || math.Abs(float64(res.Knee.Concurrency)/S-1) > 0.25 {
		t.Errorf("knee %+v, want within ±25%% of %d; warnings %q", res.Knee, S, res.Warnings)
	}
	if res.TTFTBlowup == nil || math.Abs(float64(res.TTFTBlowup.Concurrency)/S-1) > 0.25 {
		t.Errorf("ttft blow-up %+v, want within ±25%% of %d", res.TTFTBlowup, S)
	}
	if res.SLO.TTFTP95MS != 1000 || !res.SLO.MaxConcurrency.OK() {
		t.Errorf("slo %+v: want the --slo-ttft-p95 override and a max concurrency", res.SLO)
	}
	if _, err := os.Stat(filepath.Join(dir, "summary.csv")); err != nil {
		t.Error(err)
	}
}

// sampleRun is the committed sample run (examples/sample-run, a demo sweep): its records are
// not committed, its summary.csv, levels.json, config.yaml and analysis.json are.
var sampleRun = filepath.Join("..", "..", "examples", "sample-run")

// sampleCSVAnalysis is `kneecap analyze examples/sample-run/summary.csv -o DIR --bootstrap 0`,
// which TestSampleRunRoundTrip and TestAnalyzeRunWithoutRecords compare with their references.
var sampleCSVAnalysis shared[dirRun]

// sharedSampleCSVAnalysis runs the analysis once and returns its analysis.json.
func sharedSampleCSVAnalysis(t *testing.T) map[string]any {
	t.Helper()
	a := sampleCSVAnalysis.get(t, func() (a dirRun) {
		if a.dir, a.err = os.MkdirTemp(testRoot, "sample-csv"); a.err == nil {
			a.cmdRun = runCmd(nil, "analyze", filepath.Join(sampleRun, "summary.csv"), "-o", a.dir, "--bootstrap", "0")
		}
		return a
	})
	if a.err != nil {
		t.Fatalf("analyze summary.csv: %v\n%s", a.err, a.stderr)
	}
	return readJSON(t, filepath.Join(a.dir, "analysis.json"))
}

// TestSampleRunRoundTrip re-analyzes the committed sample run from its summary.csv: the knee,
// the TTFT blow-up and the SLO point agree with the committed analysis.json, which was
// computed from the records. The CSV carries the level summaries, so only the bootstrap
// resampling differs, and it gives the intervals only, none of the figures compared: the
// shared analysis runs without it.
func TestSampleRunRoundTrip(t *testing.T) {
	t.Parallel()
	want := readJSON(t, filepath.Join(sampleRun, "analysis.json"))
	got := sharedSampleCSVAnalysis(t)
	for _, keys := range [][]string{
		{"knee", "concurrency"}, {"throughput", "max_tps"}, {"ttft_blowup", "concurrency"}, {"slo", "max_concurrency"},
	} {
		w, ok1 := dig(want, keys...)
		g, ok2 := dig(got, keys...)
		wf, okw := w.(float64)
		gf, okg := g.(float64)
		if !ok1 || !ok2 || !okw || !okg {
			t.Errorf("%v: committed %v, from CSV %v", keys, w, g)
			continue
		}
		if math.Abs(gf/wf-1) > 0.02 {
			t.Errorf("%v: from summary.csv %.4g, committed %.4g: more than 2%% apart", keys, gf, wf)
		}
	}
}

// TestAnalyzeRunWithoutRecords: the committed sample run has no records.jsonl; `kneecap
// analyze DIR -o OUT` analyzes its summary.csv, says so in one stderr line, and keeps the
// run's name, model, endpoint, date and stop reason (from levels.json and config.yaml). The
// headline numbers equal those of `kneecap analyze DIR/summary.csv` (the same level table;
// the bootstrap is off so the knee interval is deterministic too).
func TestAnalyzeRunWithoutRecords(t *testing.T) {
	t.Parallel()
	dir := sampleRun
	e, _, stderr := analyzeEnv()
	out := t.TempDir()
	if err := run(context.Background(), e, []string{"analyze", dir, "-o", out, "--bootstrap", "0"}); err != nil {
		t.Fatalf("analyze: %v\n%s", err, stderr)
	}
	lines := outputLines(stderr.String(), nil)
	if len(lines) != 1 || !strings.Contains(lines[0], "no records.jsonl") || !strings.Contains(lines[0], "summary.csv") {
		t.Errorf("stderr %q, want one line saying records.jsonl is missing and summary.csv was used", lines)
	}
	got := readJSON(t, filepath.Join(out, "analysis.json"))
	committed := readJSON(t, filepath.Join(dir, "analysis.json"))
	for _, k := range []string{"name", "model", "endpoint", "date", "stop_reason"} {
		w, _ := dig(committed, "meta", k)
		g, _ := dig(got, "meta", k)
		if w == nil || g != w {
			t.Errorf("meta.%s = %v, want the run's %v", k, g, w)
		}
	}

	fromCSV := sharedSampleCSVAnalysis(t)
	for _, keys := range [][]string{{"knee", "concurrency"}, {"throughput", "max_tps"}, {"ttft_blowup", "concurrency"}, {"slo", "max_concurrency"}} {
		g, ok1 := dig(got, keys...)
		w, ok2 := dig(fromCSV, keys...)
		if !ok1 || !ok2 || g != w {
			t.Errorf("%v: %v from the directory, %v from its summary.csv; want equal", keys, g, w)
		}
	}
}

// TestAnalyzeRunWithoutRecordsErrors: without records.jsonl and summary.csv the error names
// both; without -o the directory's own analysis.json is not replaced by one from the summary.
func TestAnalyzeRunWithoutRecordsErrors(t *testing.T) {
	sample := sampleRun
	copyFiles := func(names ...string) string {
		dir := t.TempDir()
		for _, n := range names {
			b, err := os.ReadFile(filepath.Join(sample, n))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	for _, tc := range []struct {
		name string
		dir  string
		args []string
		want []string
	}{
		{"no summary.csv", copyFiles("config.yaml", "levels.json"), []string{"-o", t.TempDir()},
			[]string{"no records.jsonl", "no summary.csv"}},
		{"no -o", copyFiles("config.yaml", "levels.json", "summary.csv", "analysis.json"), nil,
			[]string{"no records.jsonl", "-o DIR is required"}},
	} {
		before, _ := os.ReadFile(filepath.Join(tc.dir, "analysis.json"))
		e, _, stderr := analyzeEnv()
		err := run(context.Background(), e, append([]string{"analyze", tc.dir}, tc.args...))
		if code := exitCode(err); code != exitUsage {
			t.Errorf("%s: exit %d (%v), want %d\n%s", tc.name, code, err, exitUsage, stderr)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(errString(err), w) {
				t.Errorf("%s: error %q lacks %q", tc.name, err, w)
			}
		}
		if after, _ := os.ReadFile(filepath.Join(tc.dir, "analysis.json")); string(after) != string(before) {
			t.Errorf("%s: analysis.json of %s was rewritten", tc.name, tc.dir)
		}
	}
}
