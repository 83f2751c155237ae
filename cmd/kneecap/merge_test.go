package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// shardConfig is a fast sharded sweep: one level every 3.6 s (warmup 600 ms, a window of 800
// ms to 1.6 s, drain 400 ms, sweep.ScheduleSlack 1 s) against the fixed engine (16 tokens in
// 230 ms).
const shardConfig = `name: sharded
workload:
  input_tokens: {dist: fixed, mean: 32}
  output_tokens: {dist: fixed, mean: 16}
sweep:
  warmup: 600ms
  duration: 800ms
  max_duration: 1600ms
  min_requests: 5
  drain_timeout: 400ms
`

// shardTarget is the simulator both shards load, and the config file naming its metrics.
type shardTarget struct {
	url, model, config string
}

// TestShardedSweepCLI runs `kneecap sweep --shard I/2 --start-at T` twice at once against one
// simulator, then `kneecap merge`: the merged directory is a results directory like any other
// (analysis, charts, reports), while a single shard is refused by analyze and by a merge
// without its sibling.
func TestShardedSweepCLI(t *testing.T) {
	t.Parallel()
	rc, err := sim.Resolve(sim.Config{Profile: sim.ProfileFixed, TTFT: 50 * time.Millisecond, ITL: 12 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Start(rc, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	st := shardTarget{url: srv.URL, model: rc.Model,
		config: writeTestConfig(t, shardConfig+"server_metrics: {url: "+strings.TrimSuffix(srv.URL, "/v1")+"/metrics, interval: 100ms}\n")}
	tmp := t.TempDir()
	dirs := runShards(t, st, tmp)
	checkShardRefusals(t, st, dirs, tmp)

	out := filepath.Join(tmp, "merged")
	e, stdout, stderr := testEnv()
	if err := run(context.Background(), e, []string{"merge", dirs[1], dirs[0], "-o", out}); err != nil {
		t.Fatalf("merge: %v\nstderr:\n%s", err, stderr)
	}
	checkMerged(t, out, dirs[0], stdout.String())
	checkMergeRefusals(t, out, dirs, tmp)
}

// runShards runs shards 0/2 and 1/2 of levels 1, 2, 6 at once in tmp/s0 and tmp/s1 and
// returns the directories; the test stops if either failed.
func runShards(t *testing.T, st shardTarget, tmp string) []string {
	t.Helper()
	// Time for both processes' start-up and preflight on a loaded machine, with room to spare:
	// a shard that reaches its first level more than half a warmup late stops.
	at := time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339Nano)
	dirs := []string{filepath.Join(tmp, "s0"), filepath.Join(tmp, "s1")}
	var wg sync.WaitGroup
	for i, d := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e, stdout, stderr := testEnv()
			err := run(context.Background(), e, []string{"sweep", "-c", st.config, "--url", st.url, "--model", st.model,
				"--levels", "1,2,6", "--shard", []string{"0/2", "1/2"}[i], "--start-at", at, "-o", d})
			if err != nil {
				t.Errorf("shard %d: %v\nstderr:\n%s", i, err, stderr)
				return
			}
			if !strings.Contains(stdout.String(), "kneecap merge") || strings.Contains(stdout.String(), "Maximum output throughput") {
				t.Errorf("shard %d: stdout should point to kneecap merge, not analyze a part of the load:\n%s", i, stdout)
			}
			if _, err := os.Stat(filepath.Join(d, "analysis.json")); err == nil {
				t.Errorf("shard %d wrote analysis.json for a part of the load", i)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	return dirs
}

// checkShardRefusals: a shard's directory is not analyzed, compared, reused by another shard
// or merged without its sibling.
func checkShardRefusals(t *testing.T, st shardTarget, dirs []string, tmp string) {
	t.Helper()
	e, _, _ := testEnv()
	if err := run(context.Background(), e, []string{"analyze", dirs[0]}); exitCode(err) != exitUsage || !strings.Contains(errString(err), "merge the shards first") {
		t.Errorf("analyze of one shard: exit %d (%v), want %d telling to merge", exitCode(err), err, exitUsage)
	}
	e, _, _ = testEnv()
	if err := run(context.Background(), e, []string{"compare", dirs[0], dirs[1], "-o", filepath.Join(tmp, "cmp")}); exitCode(err) != exitUsage || !strings.Contains(errString(err), "merge the shards first") {
		t.Errorf("compare of shards: exit %d (%v), want %d telling to merge", exitCode(err), err, exitUsage)
	}
	e, _, _ = testEnv()
	err := run(context.Background(), e, []string{"sweep", "-c", st.config, "--url", st.url, "--model", st.model,
		"--shard", "1/2", "--start-at", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), "-o", dirs[0]})
	if exitCode(err) != exitUsage || !strings.Contains(errString(err), "give each shard its own -o") {
		t.Errorf("a shard into another shard's directory: exit %d (%v), want %d", exitCode(err), err, exitUsage)
	}
	e, _, stderr := testEnv()
	err = run(context.Background(), e, []string{"merge", dirs[0], "-o", filepath.Join(tmp, "half")})
	if exitCode(err) != exitUsage || !strings.Contains(stderr.String(), "shard 1/2 missing") {
		t.Errorf("merge of one shard of two: exit %d, stderr %q; want %d naming the missing shard", exitCode(err), stderr, exitUsage)
	}
	if _, err := os.Stat(filepath.Join(tmp, "half")); err == nil {
		t.Error("a refused merge created its output directory")
	}

}

// checkMerged checks the merged directory out against shard 0's directory and what the merge
// printed.
func checkMerged(t *testing.T, out, shard0Dir, stdout string) {
	t.Helper()
	for _, f := range []string{rundir.ConfigFile, rundir.LevelsFile, rundir.RecordsFile, rundir.ServerMetricsFile,
		"analysis.json", "summary.csv", "report.md", "report.html", "throughput.png"} {
		if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
			t.Errorf("merged %s: %v (missing or empty)", f, err)
		}
	}
	if !strings.Contains(stdout, "kneecap · sharded · kneecap-sim") || !strings.Contains(stdout, "load from 2 kneecap processes") ||
		!strings.Contains(stdout, "report: "+out) {
		t.Errorf("merge printed no analysis:\n%s", stdout)
	}
	res, err := rundir.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if res.Shards != 2 || res.Config.Shard.Sharded() || len(res.Levels) != 3 || res.StopReason != sweep.StopDone {
		t.Fatalf("merged run: %d shards, shard config %+v, %d levels, stop %q", res.Shards, res.Config.Shard, len(res.Levels), res.StopReason)
	}
	shard0, err := rundir.Read(shard0Dir)
	if err != nil {
		t.Fatal(err)
	}
	groups := res.Levels
	for i, l := range res.Runs() {
		// Server metrics are summarised over the merged window, which ends at or before the
		// shards' load period: no more samples than the shard's, from the same series.
		if s, m := shard0.Levels[i].Run.Server, l.Server; s != nil && m != nil &&
			(m.Samples > s.Samples || strings.Join(m.Series, ",") != strings.Join(s.Series, ",")) {
			t.Errorf("level %d: merged server metrics %d samples of %q, shard 0 %d of %q", l.Concurrency, m.Samples, m.Series, s.Samples, s.Series)
		}
		workers := map[int]bool{}
		for _, r := range groups[i].Records {
			workers[r.Worker] = true
		}
		if len(workers) != l.Concurrency || l.Shard != nil {
			t.Errorf("level %d: records of %d workers, want all %d", l.Concurrency, len(workers), l.Concurrency)
		}
		if s := summarizeLevel(groups[i]); s.Errors != 0 || s.OutputTPS <= 0 {
			t.Errorf("level %d: %+v", l.Concurrency, s)
		}
		if l.Server == nil || l.Server.Samples == 0 {
			t.Errorf("level %d: no server metrics from the shards", l.Concurrency)
		}
	}
	var a struct {
		Meta struct {
			LoadGenerators int `json:"load_generators"`
		} `json:"meta"`
		Levels []struct {
			Concurrency int `json:"concurrency"`
		} `json:"levels"`
	}
	b, err := os.ReadFile(filepath.Join(out, "analysis.json"))
	if err != nil || json.Unmarshal(b, &a) != nil || len(a.Levels) != 3 || a.Levels[2].Concurrency != 6 || a.Meta.LoadGenerators != 2 {
		t.Errorf("analysis.json meta %+v, levels %+v (%v)", a.Meta, a.Levels, err)
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "load from 2 kneecap processes") {
		t.Errorf("report.md does not say the load came from 2 processes (%v)", err)
	}
}

// checkMergeRefusals: a merge does not overwrite a run, writes nothing when interrupted, and
// the merged sweep cannot be resumed.
func checkMergeRefusals(t *testing.T, out string, dirs []string, tmp string) {
	t.Helper()
	// A second merge into the same directory must not overwrite the run.
	e, _, _ := testEnv()
	if err := run(context.Background(), e, []string{"merge", dirs[0], dirs[1], "-o", out}); exitCode(err) != exitUsage ||
		!strings.Contains(errString(err), "choose another -o") || strings.Contains(errString(err), "--resume") {
		t.Errorf("merge into a results directory: exit %d (%v), want %d and another -o", exitCode(err), err, exitUsage)
	}
	// An interrupt before the merge writes anything: exit 130, nothing written.
	ictx, cancel := context.WithCancel(context.Background())
	cancel()
	e, _, _ = testEnv()
	e.interrupt = ictx
	if err := run(context.Background(), e, []string{"merge", dirs[0], dirs[1], "-o", filepath.Join(tmp, "cut")}); exitCode(err) != exitInterrupted {
		t.Errorf("interrupted merge: exit %d (%v), want %d", exitCode(err), err, exitInterrupted)
	}
	if _, err := os.Stat(filepath.Join(tmp, "cut")); err == nil {
		t.Error("an interrupted merge created its output directory")
	}
	// An interrupt once the merged run is written, during its analysis: exit 130 at once, the
	// merged run whole, and no analysis or report half-written (kneecap analyze writes them).
	ictx, cancel = context.WithCancel(context.Background())
	defer cancel()
	e, _, stderr := testEnv()
	e.interrupt, e.stderr = ictx, cancelOn{w: stderr, sub: "kneecap: merged ", cancel: cancel}
	late := filepath.Join(tmp, "late")
	if err := run(context.Background(), e, []string{"merge", dirs[0], dirs[1], "-o", late}); exitCode(err) != exitInterrupted ||
		!strings.Contains(errString(err), "merge interrupted: the records are written to "+late+"; its analysis and reports are not (kneecap analyze "+late+" writes them)") {
		t.Errorf("merge interrupted during its analysis: exit %d (%v), want %d", exitCode(err), err, exitInterrupted)
	}
	if res, err := rundir.Read(late); err != nil || len(res.Levels) == 0 {
		t.Errorf("the merged run interrupted during its analysis: %v", err)
	}
	for _, f := range []string{rundir.AnalysisFile, rundir.ReportHTMLFile, "throughput.svg"} {
		if _, err := os.Stat(filepath.Join(late, f)); err == nil {
			t.Errorf("merge interrupted during its analysis wrote %s", f)
		}
	}
	// An interrupt once everything is written: the merge succeeded (before: exit 130, "its
	// analysis and reports were not written").
	ictx, cancel = context.WithCancel(context.Background())
	defer cancel()
	e, stdout, _ := testEnv()
	done := filepath.Join(tmp, "done")
	e.interrupt, e.stdout = ictx, cancelOn{w: stdout, sub: "results: " + done, cancel: cancel}
	if err := run(context.Background(), e, []string{"merge", dirs[0], dirs[1], "-o", done}); err != nil || ictx.Err() == nil {
		t.Errorf("merge interrupted after writing everything: %v (interrupted: %v), want success", err, ictx.Err() != nil)
	}
	// Nor can one process resume the merged sweep.
	e, _, _ = testEnv()
	if err := run(context.Background(), e, []string{"sweep", "--resume", out}); exitCode(err) != exitUsage || !strings.Contains(errString(err), "merges 2 shards") {
		t.Errorf("resume of a merge: exit %d (%v), want %d", exitCode(err), err, exitUsage)
	}
}

// TestShardFlagErrors: a sharded sweep needs a valid I/N, an agreed start time in the future
// and a real target; it cannot be resumed.
func TestShardFlagErrors(t *testing.T) {
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	url := []string{"--url", "http://127.0.0.1:9/v1", "--model", "m"}
	cases := []struct {
		args []string
		want string
	}{
		{append([]string{"--shard", "2/2", "--start-at", future}, url...), `--shard: "2/2": want 0 ≤ I < N`},
		{append([]string{"--shard", "x", "--start-at", future}, url...), `--shard: "x": want I/N`},
		{append([]string{"--shard", "0/2"}, url...), "shard.start_at: missing"},
		{append([]string{"--shard", "0/2", "--start-at", "tomorrow"}, url...), `"tomorrow": not an RFC 3339 time`},
		{append([]string{"--shard", "0/2", "--start-at", "2020-01-01T00:00:00Z"}, url...), "passed"},
		{[]string{"--shard", "0/2", "--start-at", future}, "needs target.url"},
		{append([]string{"--shard", "0/2", "--start-at", future, "--warmup", "0s"}, url...), "needs a warmup > 0"},
		{append([]string{"--start-at", future}, url...), "needs its shard count (--shard I/N)"},
		{append([]string{"--shard", "0/2", "--start-at", future, "--refine", "2"}, url...), "a sharded sweep cannot add levels"},
	}
	for _, tc := range cases {
		e, _, stderr := testEnv()
		err := run(context.Background(), e, append([]string{"sweep"}, tc.args...))
		if exitCode(err) != exitUsage || !strings.Contains(stderr.String()+errString(err), tc.want) {
			t.Errorf("sweep %q: exit %d, %v\nstderr: %s\nwant %d saying %q", tc.args, exitCode(err), err, stderr, exitUsage, tc.want)
		}
	}
	// A shard's directory cannot be resumed: its schedule is shared and has passed.
	dir := t.TempDir()
	cfg := config.Default()
	cfg.Target.URL, cfg.Target.Model = "http://127.0.0.1:9/v1", "m"
	cfg.Shard = config.ShardConfig{Index: 1, Count: 2, StartAt: "2026-11-30T10:00:00Z"}
	d, err := rundir.Create(dir, cfg, cfg.Target.URL, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	e, _, _ := testEnv()
	err = run(context.Background(), e, []string{"sweep", "--resume", dir})
	if exitCode(err) != exitUsage || !strings.Contains(errString(err), "new --start-at") {
		t.Errorf("resume of a shard: exit %d (%v), want %d", exitCode(err), err, exitUsage)
	}
}
