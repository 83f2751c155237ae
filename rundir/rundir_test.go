package rundir

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
	"gopkg.in/yaml.v3"
)

// fakeLevel builds a level run and n records of it with distinct values.
func fakeLevel(index, conc, n int) (record.LevelRun, []record.Record) {
	base := int64(1_700_000_000_000_000_000) + int64(index)*int64(time.Minute)
	run := record.LevelRun{
		Index: index, Concurrency: conc,
		WarmupStart: base, W0: base + int64(time.Second), W1: base + int64(6*time.Second),
		DrainEnd: base + int64(7*time.Second), Steady: true, Slices: 10,
		SliceTPS: []float64{100, 101.5}, CIHalfWidth: 0.02, TrendP: 0.4,
		Client: &record.ClientStats{CPUUtilization: 0.1, SchedLatencyP99: time.Millisecond},
		Notes:  []string{"note"},
	}
	recs := make([]record.Record, n)
	for i := range recs {
		recs[i] = record.Record{
			Level: index, Concurrency: conc, Worker: i % conc, Seq: i / conc, Phase: record.PhaseMeasure,
			Sent: base + int64(i)*int64(time.Millisecond), TTFT: time.Duration(i+1) * time.Millisecond,
			E2E: time.Duration(i+10) * time.Millisecond, Chunks: []int64{1000, 2000 + int64(i)},
			PromptTokens: 512, OutputTokens: 2, TokensSource: record.TokensFromUsage, Status: record.StatusOK,
		}
	}
	recs[n-1].Status, recs[n-1].ErrorClass, recs[n-1].Error = record.StatusError, record.ErrHTTP5xx, "http 500: boom"
	return run, recs
}

func newTestDir(t *testing.T) (string, config.Config) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "runs", "r1")
	cfg := config.Default()
	cfg.Name = "unit"
	cfg.Target.URL = "http://user:s3cret@127.0.0.1:8000/v1"
	cfg.Target.Model = "m"
	cfg.Target.ExtraBody = map[string]any{"api_key": "sk-live-xyz", "ignore_eos": true}
	return dir, cfg
}

func TestResultsRoundTrip(t *testing.T) {
	dir, cfg := newTestDir(t)
	start := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	d, err := Create(dir, cfg, cfg.Target.URL, start)
	if err != nil {
		t.Fatal(err)
	}
	// A fresh directory already reads back: zero levels, no stop reason.
	if r, err := Read(dir); err != nil || len(r.Levels) != 0 || r.StopReason != "" {
		t.Fatalf("fresh Read = %+v, %v", r, err)
	}
	var runs []record.LevelRun
	var recs []record.Record
	for i, c := range []int{1, 2} {
		run, rr := fakeLevel(i, c, 5+i)
		if err := d.LevelDone(record.Level{Run: run, Records: rr}); err != nil {
			t.Fatal(err)
		}
		runs = append(runs, run)
		recs = append(recs, rr...)
	}
	if err := d.Finish(sweep.StopDone); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Runs(), runs) {
		t.Errorf("levels:\ngot  %+v\nwant %+v", r.Levels, runs)
	}
	if !reflect.DeepEqual(r.Records(), recs) {
		t.Errorf("records differ: got %d, want %d", len(r.Records()), len(recs))
	}
	if !r.Start.Equal(start) || r.StopReason != sweep.StopDone || r.Endpoint != "http://127.0.0.1:8000/v1" {
		t.Errorf("header: start %v, reason %q, endpoint %q", r.Start, r.StopReason, r.Endpoint)
	}
	if r.Config.Name != "unit" || r.Config.Target.Model != "m" || r.Config.Sweep.Duration != cfg.Sweep.Duration {
		t.Errorf("config read back: %+v", r.Config)
	}
	if err := r.Config.Validate(); err != nil {
		t.Errorf("config.yaml does not validate: %v", err)
	}

	// No secret reaches any file, and atomic writes leave no temporary files.
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range []string{"s3cret", "sk-live-xyz"} {
			if strings.Contains(string(b), secret) {
				t.Errorf("%s contains the secret %q", e.Name(), secret)
			}
		}
	}
	if want := []string{ConfigFile, LevelsFile, RecordsFile}; !reflect.DeepEqual(names, want) {
		t.Errorf("directory holds %v, want exactly %v (no temporary files)", names, want)
	}

	var doc map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, LevelsFile))
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"schema", "name", "model", "endpoint", "start", "stop_reason", "levels"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("levels.json lacks key %q", k)
		}
	}
	if doc["schema"] != levelsSchema {
		t.Errorf("schema = %v", doc["schema"])
	}
}

func TestCreateRefusesExistingRun(t *testing.T) {
	dir, cfg := newTestDir(t)
	d, err := Create(dir, cfg, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
	_, err = Create(dir, cfg, "", time.Now())
	if err == nil || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "--resume") {
		t.Errorf("Create over a run = %v, want an error naming the dir and --resume", err)
	}
}

func TestCreateNotWritable(t *testing.T) {
	parent := t.TempDir()
	file := filepath.Join(parent, "plainfile")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "run") // a directory inside a regular file cannot exist
	_, err := Create(dir, config.Default(), "", time.Now())
	if err == nil || !strings.Contains(err.Error(), dir) {
		t.Errorf("Create(%s) = %v, want an error naming it", dir, err)
	}
}

// writeKilledRun writes two finished levels, then what a process killed during the third
// level's write leaves behind: some of its records and a partial last line.
func writeKilledRun(t *testing.T) (string, []record.Record) {
	t.Helper()
	dir, cfg := newTestDir(t)
	d, err := Create(dir, cfg, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var keep []record.Record
	for i, c := range []int{1, 2} {
		run, rr := fakeLevel(i, c, 4)
		if err := d.LevelDone(record.Level{Run: run, Records: rr}); err != nil {
			t.Fatal(err)
		}
		keep = append(keep, rr...)
	}
	d.Close()
	_, half := fakeLevel(2, 4, 3)
	f, err := os.OpenFile(filepath.Join(dir, RecordsFile), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	for i := range half {
		if err := enc.Encode(&half[i]); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.WriteString(`{"level":2,"concurrency":4,"wor`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return dir, keep
}

func TestReadDropsUnfinishedLevel(t *testing.T) {
	dir, keep := writeKilledRun(t)
	r, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Levels) != 2 || !reflect.DeepEqual(r.Records(), keep) {
		t.Errorf("got %d levels and %d records, want 2 and %d", len(r.Levels), len(r.Records()), len(keep))
	}
}

func TestReadCorruptLine(t *testing.T) {
	dir, _ := writeKilledRun(t)
	p := filepath.Join(dir, RecordsFile)
	b, _ := os.ReadFile(p)
	lines := strings.SplitAfter(string(b), "\n")
	lines[2] = "{not json\n"
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Read(dir)
	if err == nil || !strings.Contains(err.Error(), RecordsFile+":3:") {
		t.Errorf("Read = %v, want an error naming %s:3", err, RecordsFile)
	}
}

// TestReadStatus: a record whose status is missing or unknown (an edited records.jsonl) is
// refused, naming its line: whether its tokens count would otherwise be an accident.
func TestReadStatus(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, from, to, want string }{
		{"missing", `,"status":"ok"`, ``, `status "", want "ok", "error" or "cancelled"`},
		{"unknown", `"status":"ok"`, `"status":"fine"`, `status "fine"`},
	} {
		dir, _ := writeKilledRun(t)
		p := filepath.Join(dir, RecordsFile)
		b, _ := os.ReadFile(p)
		lines := strings.SplitAfter(string(b), "\n")
		if !strings.Contains(lines[1], tc.from) {
			t.Fatalf("%s: line 2 %q has no %s", tc.name, lines[1], tc.from)
		}
		lines[1] = strings.Replace(lines[1], tc.from, tc.to, 1)
		if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Read(dir)
		if err == nil || !strings.Contains(err.Error(), RecordsFile+":2: "+tc.want) {
			t.Errorf("%s: Read = %v, want an error naming %s:2: %s", tc.name, err, RecordsFile, tc.want)
		}
	}
}

// TestLevelDoneStatus: a level with a record of unknown status is refused on write too, naming
// the record and the status as reading it back would, and nothing of it is written: the
// directory reads back with the levels before it.
func TestLevelDoneStatus(t *testing.T) {
	t.Parallel()
	dir, cfg := newTestDir(t)
	d, err := Create(dir, cfg, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	run, rr := fakeLevel(0, 1, 4)
	if err := d.LevelDone(record.Level{Run: run, Records: rr}); err != nil {
		t.Fatal(err)
	}
	run, rr = fakeLevel(1, 2, 4)
	rr[2].Status = "fine"
	err = d.LevelDone(record.Level{Run: run, Records: rr})
	d.Close()
	if err == nil || !strings.Contains(err.Error(), `level 1: record 2 (worker `) || !strings.Contains(err.Error(), `status "fine", want "ok", "error" or "cancelled"`) {
		t.Errorf("LevelDone = %v, want the record's unknown status refused", err)
	}
	res, rerr := Read(dir)
	if rerr != nil || len(res.Levels) != 1 || len(res.Records()) != 4 {
		t.Fatalf("Read = %v: want the first level alone", rerr)
	}
}

// TestReadContext: reading records.jsonl ends with the context's error once it is done (an
// interrupt), looking every checkEvery lines, so a huge file does not hold a command up.
func TestReadContext(t *testing.T) {
	t.Parallel()
	dir, keep := writeKilledRun(t)
	ctx, cancel := context.WithCancel(context.Background())
	if r, err := ReadContext(ctx, dir); err != nil || len(r.Records()) != len(keep) {
		t.Fatalf("ReadContext before the interrupt: %v", err)
	}
	cancel()
	if _, err := ReadContext(ctx, dir); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadContext after the interrupt = %v, want context.Canceled", err)
	}
}

func TestResume(t *testing.T) {
	dir, keep := writeKilledRun(t)
	d, done, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(done.Levels) != 2 || len(done.Records()) != len(keep) || done.Config.Name != "unit" {
		t.Fatalf("Resume gave %d levels, %d records", len(done.Levels), len(done.Records()))
	}
	// The half-written level is gone from the file: only whole records of finished levels.
	b, _ := os.ReadFile(filepath.Join(dir, RecordsFile))
	if n := strings.Count(string(b), "\n"); n != len(keep) || !strings.HasSuffix(string(b), "\n") {
		t.Errorf("records.jsonl has %d lines after resume, want %d", n, len(keep))
	}
	run, rr := fakeLevel(2, 4, 6)
	if err := d.LevelDone(record.Level{Run: run, Records: rr}); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(sweep.StopDone); err != nil {
		t.Fatal(err)
	}
	d.Close()
	r, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Levels) != 3 || len(r.Records()) != len(keep)+6 || r.Records()[len(r.Records())-1].Level != 2 {
		t.Errorf("after resume: %d levels, %d records", len(r.Levels), len(r.Records()))
	}
}

func TestServerMetricsFile(t *testing.T) {
	dir, cfg := newTestDir(t)
	d, err := Create(dir, cfg, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	w, err := d.ServerMetrics()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("{\"t\":1}\n")); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, ServerMetricsFile))
	if err != nil || string(b) != "{\"t\":1}\n" {
		t.Errorf("server_metrics.jsonl = %q, %v", b, err)
	}
	if err := d.LevelDone(record.Level{Run: record.LevelRun{}, Records: nil}); err == nil {
		t.Error("LevelDone after Close should fail")
	}
}

func TestReadLineBounded(t *testing.T) {
	r := bufio.NewReaderSize(strings.NewReader("short\n"+strings.Repeat("x", 100)+"\ntail"), 16)
	line, err := readLine(r, nil, 50)
	if err != nil || string(line) != "short\n" {
		t.Fatalf("readLine = %q, %v", line, err)
	}
	if _, err := readLine(r, nil, 50); !errors.Is(err, errLineTooLong) {
		t.Errorf("long line: err = %v, want errLineTooLong", err)
	}
}

func TestResumeDropsInterruptedLevel(t *testing.T) {
	dir, cfg := newTestDir(t)
	d, err := Create(dir, cfg, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	run0, rr0 := fakeLevel(0, 1, 4)
	run1, rr1 := fakeLevel(1, 2, 3)
	run1.Interrupted = true
	for _, l := range []struct {
		run record.LevelRun
		rr  []record.Record
	}{{run0, rr0}, {run1, rr1}} {
		if err := d.LevelDone(record.Level{Run: l.run, Records: l.rr}); err != nil {
			t.Fatal(err)
		}
	}
	d.Finish(sweep.StopInterrupted)
	d.Close()
	// analyze sees the interrupted level; resume runs it again.
	if r, err := Read(dir); err != nil || len(r.Levels) != 2 || len(r.Records()) != 7 || r.StopReason != sweep.StopInterrupted {
		t.Fatalf("Read = %d levels, %d records, %v", len(r.Levels), len(r.Records()), err)
	}
	d, done, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if len(done.Levels) != 1 || len(done.Records()) != 4 {
		t.Errorf("Resume kept %d levels, %d records; want 1 and 4", len(done.Levels), len(done.Records()))
	}
	if r, err := Read(dir); err != nil || len(r.Levels) != 1 || len(r.Records()) != 4 || r.StopReason != "" {
		t.Errorf("after Resume: %+v, %v", r, err)
	}
}

// TestResumeFinishedRunUntouched: Resume refuses a finished run before rewriting anything,
// so levels.json keeps its stop reason and records.jsonl its bytes.
func TestResumeFinishedRunUntouched(t *testing.T) {
	dir, cfg := newTestDir(t)
	d, err := Create(dir, cfg, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	run0, rr0 := fakeLevel(0, 1, 4)
	if err := d.LevelDone(record.Level{Run: run0, Records: rr0}); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish("plateau"); err != nil {
		t.Fatal(err)
	}
	d.Close()
	levels0, _ := os.ReadFile(filepath.Join(dir, LevelsFile))
	records0, _ := os.ReadFile(filepath.Join(dir, RecordsFile))
	if _, _, err := Resume(dir); !errors.Is(err, ErrFinished) {
		t.Fatalf("Resume of a finished run: %v, want ErrFinished", err)
	}
	levels1, _ := os.ReadFile(filepath.Join(dir, LevelsFile))
	records1, _ := os.ReadFile(filepath.Join(dir, RecordsFile))
	if !bytes.Equal(levels0, levels1) || !bytes.Equal(records0, records1) {
		t.Error("Resume rewrote a finished run's files")
	}
}

// TestPromptSizingRecorded: the sizing set on a Dir is in levels.json, read back by Read and
// kept by Resume.
func TestPromptSizingRecorded(t *testing.T) {
	dir, cfg := newTestDir(t)
	d, err := Create(dir, cfg, cfg.Target.URL, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	sz := &record.PromptSizing{Method: record.SizingUsage, Source: "usage.prompt_tokens of 4 probe requests",
		TokensPerWord: 1.64, OverheadTokens: 39.4, Probes: 4, MinPromptTokens: 41, Notes: []string{"n"}}
	d.SetPromptSizing(sz)
	run, rr := fakeLevel(0, 1, 3)
	if err := d.LevelDone(record.Level{Run: run, Records: rr}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	b, _ := os.ReadFile(filepath.Join(dir, LevelsFile))
	if !strings.Contains(string(b), `"prompt_sizing": {`) || !strings.Contains(string(b), `"tokens_per_word": 1.64`) {
		t.Errorf("levels.json lacks the sizing:\n%s", b)
	}
	r, err := Read(dir)
	if err != nil || !reflect.DeepEqual(r.PromptSizing, sz) {
		t.Fatalf("Read: %+v, %v; want %+v", r.PromptSizing, err, sz)
	}
	d, done, err := Resume(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Finish(sweep.StopDone); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if r, err := Read(dir); err != nil || !reflect.DeepEqual(done.PromptSizing, sz) || !reflect.DeepEqual(r.PromptSizing, sz) {
		t.Errorf("after resume: %+v, %+v, %v", done.PromptSizing, r.PromptSizing, err)
	}
}

// TestResumeRefusesAnotherConfig: a run's config.yaml replaced by one that measures something
// else (another run's: other prompt lengths) is refused by Resume, naming the keys, before
// anything is rewritten; the run as written resumes, and keeps its measured_config (issue 26:
// the resumed levels mixed 128- and 64-token prompts in one analysis).
func TestResumeRefusesAnotherConfig(t *testing.T) {
	dir, _ := writeKilledRun(t)
	p := filepath.Join(dir, ConfigFile)
	orig, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Read(p)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Workload.InputTokens.Mean++
	b, err := yaml.Marshal(cfg.Redacted())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	levels0, _ := os.ReadFile(filepath.Join(dir, LevelsFile))
	if _, _, err := Resume(dir); err == nil || !strings.Contains(err.Error(), "workload.input_tokens.mean now differ from what the run started with") {
		t.Fatalf("Resume with another config.yaml: %v, want a refusal naming workload.input_tokens.mean", err)
	}
	if levels1, _ := os.ReadFile(filepath.Join(dir, LevelsFile)); !bytes.Equal(levels0, levels1) {
		t.Error("the refused Resume rewrote levels.json")
	}
	if err := os.WriteFile(p, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	d, done, err := Resume(dir)
	if err != nil {
		t.Fatalf("Resume of the run as written: %v", err)
	}
	defer d.Close()
	if len(done.Measured) == 0 {
		t.Error("levels.json has no measured_config")
	}
	if again, err := ReadMeta(dir); err != nil || len(again.Measured) != len(done.Measured) {
		t.Errorf("after Resume, levels.json's measured_config: %v, %d keys, want %d", err, len(again.Measured), len(done.Measured))
	}
}
