package summary

import (
	"bytes"
	"errors"
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

// writeRun writes a results directory of a closed-loop sweep against the simulator's ground
// truth (DESIGN §6): 8 slots, step t(b) = 4 ms + 250 µs·b, 16 output tokens per request, one
// second of window per level. Every worker sends back to back.
func writeRun(t *testing.T, dir string, cfg config.Config, levels []int) {
	t.Helper()
	const slots, outTok = 8, 16
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	d, err := rundir.Create(dir, cfg, "http://127.0.0.1:0/v1", start)
	if err != nil {
		t.Fatal(err)
	}
	t0 := start.UnixNano()
	for li, c := range levels {
		b := min(c, slots)
		step := 4*time.Millisecond + time.Duration(b)*250*time.Microsecond
		e2e := time.Duration(float64(c) / float64(b) * outTok * float64(step))
		ttft := e2e - (outTok-1)*step
		run := record.LevelRun{Index: li, Concurrency: c, WarmupStart: t0, W0: t0 + int64(2*e2e), W1: t0 + int64(2*e2e+time.Second),
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
					TTFT: ttft, E2E: e2e, Chunks: chunks, PromptTokens: 64, OutputTokens: outTok,
					TokensSource: record.TokensFromUsage, Status: record.StatusOK})
				sent += int64(e2e)
				run.DrainEnd = max(run.DrainEnd, recs[len(recs)-1].Done())
			}
		}
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

// runConfig is a run's configuration with an SLO, a knee gain and a capacity plan of its own.
func runConfig() config.Config {
	cfg := config.Config{Name: "ground-truth", Target: config.TargetConfig{Model: "sim"}}
	cfg.SLO.TTFTP95 = 900 * time.Millisecond
	cfg.Analysis.KneeGain = 0.2
	cfg.Plan.ConcurrentUsers = 500
	return cfg
}

// A results directory with its records: its levels summarized from them under the caller's
// options, its meta from levels.json, its options from config.yaml, analyzable in place.
func TestLoadResultsDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, runConfig(), []int{1, 2, 4, 8, 16})
	for _, inPlace := range []bool{false, true} {
		in, err := Load(dir, inPlace)
		if err != nil {
			t.Fatal(err)
		}
		if in.Kind != resultsDir || !in.InPlace() || in.Path != dir {
			t.Errorf("kind %v, in place %v, path %s; want ResultsDir, in place, %s", in.Kind, in.InPlace(), in.Path, dir)
		}
		if m := in.Meta; m.Name != "ground-truth" || m.Model != "sim" || m.Source != dir || m.Date != "2026-01-02T03:04:05Z" ||
			m.Endpoint != "http://127.0.0.1:0/v1" || m.StopReason != sweep.StopDone {
			t.Errorf("meta %+v", m)
		}
		if o := in.Options; o.SLO.TTFTP95 != 900*time.Millisecond || o.SLO.TPOTP95 != 0 || o.KneeGain != 0.2 || o.Plan.ConcurrentUsers != 500 {
			t.Errorf("options %+v: want the config's SLO, knee gain and plan", o)
		}
	}
	in, _ := Load(dir, true)
	levels := in.Levels(in.Options)
	if len(levels) != 5 || levels[4].Concurrency != 16 || !levels[0].OutputTPS.OK() {
		t.Fatalf("levels %+v", levels)
	}
	// Every request takes 16 × t(b): under a 1 ms TTFT SLO none is good, under the config's
	// 900 ms all are: the records are summarized under the options passed.
	strict := in.Options
	strict.SLO.TTFTP95 = time.Millisecond
	if g, l := in.Levels(strict)[0].GoodputQPS, levels[0].GoodputQPS; !(g == 0 && l > 0) {
		t.Errorf("goodput at concurrency 1: %v under a 1 ms TTFT SLO, %v under 900 ms; want 0 and > 0", g, l)
	}
	res := in.Analyze(in.Options)
	if res.Meta.Name != "ground-truth" || len(res.Levels) != 5 || res.SLO.TTFTP95MS != 900 {
		t.Errorf("analysis meta %+v, %d levels, SLO %+v", res.Meta, len(res.Levels), res.SLO)
	}
}

// A results directory without records.jsonl is read from its summary.csv, and refused when
// the caller would write into it; one that measured nothing is read in place.
func TestLoadResultsSummary(t *testing.T) {
	root := t.TempDir()
	src := filepath.Join(root, "src")
	writeRun(t, src, runConfig(), []int{1, 2, 4})
	full, err := Load(src, true)
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	if err := WriteCSV(&csv, full.Levels(full.Options)); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "norec")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{rundir.ConfigFile, rundir.LevelsFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// No summary.csv either: nothing to analyze.
	if _, err := Load(dir, false); err == nil || err.Error() != dir+" has no records.jsonl and no summary.csv: nothing to analyze" {
		t.Errorf("without summary.csv: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CSVFile), csv.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Load(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if in.Kind != ResultsSummary || in.InPlace() || in.Meta.Name != "ground-truth" || in.Meta.Source != dir || in.Options.KneeGain != 0.2 {
		t.Errorf("kind %v, in place %v, meta %+v, knee gain %v", in.Kind, in.InPlace(), in.Meta, in.Options.KneeGain)
	}
	if got, want := in.Levels(analysis.DefaultOptions()), full.Levels(full.Options); len(got) != 3 || got[2].OutputTPS != want[2].OutputTPS {
		t.Errorf("levels from summary.csv %+v, want the records' %+v", got, want)
	}
	if _, err := Load(dir, true); !errors.Is(err, ErrInPlace) || !strings.HasPrefix(err.Error(), dir+" has no records.jsonl: ") {
		t.Errorf("in place: %v, want ErrInPlace", err)
	}
	// The refusal comes before summary.csv is read; without it a malformed file is named.
	if err := os.WriteFile(filepath.Join(dir, CSVFile), []byte("concurrency,output_tps\n1,x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, true); !errors.Is(err, ErrInPlace) {
		t.Errorf("in place, malformed summary.csv: %v, want ErrInPlace", err)
	}
	want := filepath.Join(dir, CSVFile) + `:2: column "output_tps": "x" is not a number`
	if _, err := Load(dir, false); err == nil || err.Error() != want {
		t.Errorf("malformed summary.csv: %v, want %s", err, want)
	}

	// A run that measured no level has no records to lose: read as a results directory.
	empty := filepath.Join(root, "empty")
	writeRun(t, empty, runConfig(), nil)
	if err := os.Remove(filepath.Join(empty, rundir.RecordsFile)); err != nil {
		t.Fatal(err)
	}
	in, err = Load(empty, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Kind != resultsDir || !in.InPlace() || len(in.Levels(in.Options)) != 0 {
		t.Errorf("no levels: kind %v, in place %v", in.Kind, in.InPlace())
	}
}

// One shard of a sharded sweep is refused, with or without its records.
func TestLoadShard(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "shard")
	cfg := runConfig()
	cfg.Shard = config.ShardConfig{Index: 0, Count: 2, StartAt: "2026-01-02T03:04:05Z"}
	writeRun(t, dir, cfg, []int{1})
	for _, removeRecords := range []bool{false, true} {
		if removeRecords {
			if err := os.Remove(filepath.Join(dir, rundir.RecordsFile)); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := Load(dir, false); err == nil || !strings.Contains(err.Error(), dir+" is shard 0/2") {
			t.Errorf("shard (records removed: %v): %v", removeRecords, err)
		}
	}
}

// TestLoadEmptyRecords: a results directory whose records.jsonl is empty while levels.json
// lists levels is not analyzed in place (its analysis would become one of nothing: before,
// it was, as "no valid level"); elsewhere it is analyzed from its summary.csv, saying why.
func TestLoadEmptyRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, runConfig(), []int{1, 2})
	full, err := Load(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	var csv bytes.Buffer
	if err := WriteCSV(&csv, full.Levels(full.Options)); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(dir, rundir.RecordsFile), 0); err != nil {
		t.Fatal(err)
	}
	why := "levels.json lists 2 levels, but records.jsonl is empty"
	if _, err := Load(dir, true); !errors.Is(err, ErrInPlace) || err.Error() != dir+": "+why+": "+ErrInPlace.Error() {
		t.Errorf("in place: %v, want ErrInPlace saying %q", err, why)
	}
	if _, err := Load(dir, false); err == nil || err.Error() != dir+": "+why+", and it has no summary.csv: nothing to analyze" {
		t.Errorf("without summary.csv: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, CSVFile), csv.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := Load(dir, false)
	if err != nil || in.Kind != ResultsSummary || in.Why != dir+": "+why || len(in.Levels(in.Options)) != 2 {
		t.Errorf("with summary.csv: %+v, %v", in, err)
	}
}

// TestDroppedLinesWarn: the lines of records.jsonl left out (here a partial last line) are
// counted in the analysis's first warning.
func TestDroppedLinesWarn(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, runConfig(), []int{1, 2})
	f, err := os.OpenFile(filepath.Join(dir, rundir.RecordsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"level":1,"concurr`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	in, err := Load(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	res := in.Analyze(in.Options)
	want := filepath.Join(dir, rundir.RecordsFile) + ": 1 line left out: the last one (line "
	if len(res.Warnings) == 0 || !strings.HasPrefix(res.Warnings[0], want) {
		t.Errorf("warnings %q, want the first to start %q", res.Warnings, want)
	}
}
