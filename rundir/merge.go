package rundir

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// Merge combines the results of every shard of one sharded sweep (config.ShardConfig) into the
// results of the whole sweep, as if one process had run every worker: each level's records
// are the union of the shards' records, its window is chosen from the union as the
// one-process controller would (see Schedule), and the steady-state verdict, slice TPS and
// notes are computed again from the union. Client
// diagnostics take the worst shard (a level is client-bound when any shard was); server
// metrics come from the lowest-numbered shard that scraped them.
//
// parts must be every shard exactly once, with the same configuration apart from
// shard.index and output.dir, and levels on the same schedule; anything else is an error
// naming the directories. Levels that only some shards finished (one was interrupted or
// stopped early) are left out, with a warning each; a level that any shard ran interrupted is
// kept and marked interrupted, so the analysis treats it as invalid. A level whose shards
// ended their windows at different moments (sweep.ErrEndedApart: a server's death) is left
// out with a warning too; none left is an error. The result's Config has no shard section,
// and its Shards counts the parts. Once ctx is done (an interrupt) it stops
// before the next level and returns ctx's error.
func Merge(ctx context.Context, parts []*Run) (*Run, []string, error) {
	ordered, err := orderShards(parts)
	if err != nil {
		return nil, nil, err
	}
	first, n := ordered[0], len(ordered)
	if d := first.Config.Sweep.Duration; d < record.MinSlices {
		return nil, nil, fmt.Errorf("merge: %s: sweep.duration %s is shorter than its %d slices", first.Dir, d, record.MinSlices)
	}
	cfg := first.Config
	cfg.Shard = config.ShardConfig{}
	cfg.Output.Dir = ""
	out := &Run{
		Config:   cfg,
		Start:    first.Start,
		Endpoint: first.Endpoint,
		Shards:   n,
		Kneecap:  first.Kneecap,
		Server:   first.Server,

		PromptSizing: first.PromptSizing,
		GPUIdle:      first.GPUIdle,
	}
	warnings := generatorWarnings(ordered)
	common := len(first.Levels)
	for _, p := range ordered {
		common = min(common, len(p.Levels))
		if p.Start.Before(out.Start) {
			out.Start = p.Start
		}
	}
	if common == 0 {
		return nil, nil, fmt.Errorf("merge: no level was finished by every shard: nothing to merge (%s)", strings.Join(shardLevels(ordered), ", "))
	}
	for _, p := range ordered {
		for _, l := range p.Levels[common:] {
			warnings = append(warnings, fmt.Sprintf("%s left out: shard %s finished it, but not every shard did",
				sweep.LevelName(&l.Run), p.Config.Shard))
		}
	}
	var errs []error
	files := sweep.Recordings{ // on each shard's own clock
		Server: rereader(ordered, ServerMetricsFile, ReadServerMetrics, server.SummarizeSamples),
		GPU:    rereader(ordered, GPUMetricsFile, ReadGPUMetrics, server.SummarizeGPU),
	}
	replay, unchecked := mergeReplay(ordered, common)
	warnings = append(warnings, unchecked...)
	shardRuns := make([][]record.LevelRun, n)
	for i, p := range ordered {
		shardRuns[i] = p.Runs()[:common]
	}
	warnings = append(warnings, clockWarnings(shardRuns)...)
	for j := range common {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		level, why, err := mergeLevel(ctx, ordered, j, cfg.Sweep, files, replay)
		if errors.Is(err, sweep.ErrEndedApart) { // a server's death: the other levels stand
			warnings = append(warnings, strings.TrimPrefix(err.Error(), "merge: ")+": left out")
			continue
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		warnings = append(warnings, why...)
		out.Levels = append(out.Levels, level)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}
	if len(out.Levels) == 0 {
		return nil, nil, fmt.Errorf("merge: no level could be merged: %s", strings.Join(warnings, "; "))
	}
	out.Clocks = record.ClockSummary(out.Runs())
	var why []string
	out.StopReason, why = stopReason(ordered)
	return out, append(warnings, why...), nil
}

// generatorWarnings warns of each shard (ordered, in shard order) whose kneecap or prompt
// sizing differs from shard 0's: its requests may not be the others'.
func generatorWarnings(ordered []*Run) []string {
	var warnings []string
	first := ordered[0]
	for _, p := range ordered[1:] {
		if p.Kneecap != first.Kneecap {
			warnings = append(warnings, fmt.Sprintf("shard %s ran kneecap %q, shard %s %q: the load generators differ",
				p.Config.Shard, p.Kneecap, first.Config.Shard, first.Kneecap))
		}
		if a, b := sizingText(p.PromptSizing), sizingText(first.PromptSizing); a != b {
			warnings = append(warnings, fmt.Sprintf("shard %s sized its prompts as %s, shard %s as %s: their requests differ",
				p.Config.Shard, a, first.Config.Shard, b))
		}
	}
	return warnings
}

// mergeLevel merges level j of the shards (ordered, in shard order; sweep.MergeLevel) once
// their records and level times are moved onto the reference clock (shiftOntoReference).
// files re-reads a shard's server metrics and GPU readings on its own clock: the merged
// window is asked of them shifted back by the offset its level ran on.
func mergeLevel(ctx context.Context, ordered []*Run, j int, proto sweep.Protocol, files sweep.Recordings, replay *sweep.Replay) (record.Level, []string, error) {
	n := len(ordered)
	runs := make([]record.LevelRun, n)
	records := make([][]record.Record, n)
	offset := make([]int64, n)
	for i, p := range ordered {
		runs[i] = p.Levels[j].Run
		records[i] = slices.Clone(p.Levels[j].Records)
		shiftOntoReference(&runs[i], records[i])
		if c := runs[i].Clock; c != nil {
			offset[i] = c.Offset
		}
	}
	rec := sweep.Recordings{
		Server: func(i int, w0, w1 int64) (*record.ServerStats, error) {
			return files.Server(i, w0+offset[i], w1+offset[i])
		},
		GPU: func(i int, w0, w1 int64) (*record.GPUStats, error) { return files.GPU(i, w0+offset[i], w1+offset[i]) },
	}
	return sweep.MergeLevel(ctx, runs, records, proto, rec, replay)
}

// orderShards checks that parts are every shard of one sweep exactly once, with the same
// configuration but for the shard index and output directory, and returns them in shard order.
// Every problem found is in the error, one per line, naming the directories.
func orderShards(parts []*Run) ([]*Run, error) {
	if len(parts) == 0 {
		return nil, errors.New("merge: no shard results")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	byIndex := map[int]*Run{}
	n := parts[0].Config.Shard.Count
	for _, p := range parts {
		sh := p.Config.Shard
		switch {
		case !sh.Sharded():
			bad("%s is not a shard of a sharded sweep (its config.yaml has no shard section)", p.Dir)
			continue
		case sh.Count != n:
			bad("%s is shard %s but %s is shard %s: not shards of one sweep", p.Dir, sh, parts[0].Dir, parts[0].Config.Shard)
			continue
		case sh.Index < 0 || sh.Index >= sh.Count:
			bad("%s: shard index %d outside [0, %d)", p.Dir, sh.Index, sh.Count)
			continue
		}
		if q, dup := byIndex[sh.Index]; dup {
			bad("%s and %s are both shard %s", q.Dir, p.Dir, sh)
			continue
		}
		byIndex[sh.Index] = p
		if diff := configDiff(parts[0].Config, p.Config); len(diff) > 0 {
			bad("%s: configuration differs from %s's in %s: not shards of one sweep", p.Dir, parts[0].Dir, strings.Join(diff, ", "))
		}
	}
	if len(errs) == 0 {
		var missing []string
		for i := range n {
			if byIndex[i] == nil {
				missing = append(missing, fmt.Sprintf("%d/%d", i, n))
			}
		}
		if len(missing) > 0 {
			bad("merge: shard %s missing: give every shard's results directory", strings.Join(missing, ", "))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	ordered := make([]*Run, n)
	for i := range n {
		ordered[i] = byIndex[i]
	}
	return ordered, nil
}

// rereader returns the function sweep.MergeLevel summarises one of a shard's recordings with
// over the merged window (the shard summarised its own window): the file name in the shard's
// directory, read once with read, summarised with summarize. A shard recorded the file
// whenever its levels carry the figures it summarises, so a missing file is an error.
func rereader[T, S any](ordered []*Run, name string, read func(string) ([]T, error), summarize func([]T, int64, int64) *S) func(shard int, w0, w1 int64) (*S, error) {
	done := map[int][]T{}
	return func(shard int, w0, w1 int64) (*S, error) {
		v, ok := done[shard]
		if !ok {
			var err error
			if v, err = read(filepath.Join(ordered[shard].Dir, name)); err != nil {
				return nil, err
			}
			done[shard] = v
		}
		return summarize(v, w0, w1), nil
	}
}

// stopReason is the merged sweep's stop reason: the shards' when they agree, else each
// reason with the shards that gave it ("shard 0/2: …; shard 1/2: …"). A shard without one
// (killed) is warned about.
func stopReason(ordered []*Run) (string, []string) {
	var warnings []string
	reasons := map[string][]string{}
	var order []string
	for _, p := range ordered {
		reason := p.StopReason
		if reason == "" {
			reason = "did not finish (no stop reason: killed?)"
			warnings = append(warnings, fmt.Sprintf("shard %s did not finish: its levels.json has no stop reason (was it killed?)", p.Config.Shard))
		}
		if _, seen := reasons[reason]; !seen {
			order = append(order, reason)
		}
		reasons[reason] = append(reasons[reason], p.Config.Shard.String())
	}
	if len(order) == 1 {
		return order[0], warnings
	}
	var b []string
	for _, r := range order {
		b = append(b, fmt.Sprintf("shard %s: %s", strings.Join(reasons[r], ", "), r))
	}
	return strings.Join(b, "; "), warnings
}

// shardLevels describes how many levels each shard finished: "shard 0/2: 3 levels".
func shardLevels(parts []*Run) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = fmt.Sprintf("shard %s: %d levels", p.Config.Shard, len(p.Levels))
	}
	return out
}

// configDiff names the sections (top-level keys) of two shards' configurations that differ
// in what loads the server, ignoring shard.index, output.dir and the clock's addresses
// (shard.serve_clock, shard.clock_server), which differ between shards by design, and slo,
// analysis and plan, which only the analysis of the merge uses (the first shard's).
// start_at is compared as an instant.
func configDiff(a, b config.Config) []string {
	for _, c := range []*config.Config{&a, &b} {
		c.Shard.Index, c.Output.Dir = 0, ""
		c.Shard.ServeClock, c.Shard.ClockServer = "", ""
		var zero config.Config
		c.SLO, c.Analysis, c.Plan = zero.SLO, zero.Analysis, zero.Plan
		if t, err := c.Shard.Start(); err == nil {
			c.Shard.StartAt = t.UTC().Format(time.RFC3339Nano)
		}
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	t := va.Type()
	var diff []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		ya, erra := yaml.Marshal(va.Field(i).Interface())
		yb, errb := yaml.Marshal(vb.Field(i).Interface())
		if erra != nil || errb != nil || !bytes.Equal(ya, yb) {
			key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			diff = append(diff, key)
		}
	}
	return diff
}

// errNotMerged is wrapped by CheckNotShard.
var errNotMerged = errors.New("one shard of a sharded sweep holds a part of every level's load: merge the shards first (kneecap merge SHARD_DIR... -o DIR)")

// CheckNotShard returns an error when res is one shard of a sharded sweep: analyzing it alone
// would attribute the whole level's concurrency to a part of its load.
func CheckNotShard(res *Run) error {
	if res.Config.Shard.Sharded() {
		return fmt.Errorf("%s is shard %s: %w", res.Dir, res.Config.Shard, errNotMerged)
	}
	return nil
}

// WriteMerged writes merged (Merge's result of parts) into the new results directory dir:
// config.yaml, records.jsonl and levels.json level by level, shard 0's server_info.json (only
// shard 0 asks the server), and the server metrics of the lowest-numbered shard that scraped
// them (every shard scrapes the same server).
func WriteMerged(dir string, merged *Run, parts []*Run) (err error) {
	d, err := Create(dir, merged.Config, merged.Endpoint, merged.Start)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.Close()) }()
	d.SetMerged(merged.Shards)
	var info []byte
	for _, p := range parts {
		if p.Config.Shard.Index == 0 {
			info, _ = os.ReadFile(filepath.Join(p.Dir, ServerInfoFile))
		}
	}
	if err := d.SetProvenance(merged.Kneecap, merged.Server, info); err != nil {
		return err
	}
	d.SetPromptSizing(merged.PromptSizing)
	for _, l := range merged.Levels {
		if err := d.LevelDone(l); err != nil {
			return err
		}
	}
	if src := shardMetrics(parts); src != "" {
		w, err := d.ServerMetrics()
		if err != nil {
			return err
		}
		f, err := os.Open(src)
		if err != nil {
			return err
		}
		_, err = io.Copy(w, f)
		f.Close()
		if err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
	}
	return d.Finish(merged.StopReason)
}

// shardMetrics returns the server_metrics.jsonl of the lowest-numbered shard that has a
// non-empty one ("" when none has).
func shardMetrics(parts []*Run) string {
	best, path := -1, ""
	for _, p := range parts {
		f := filepath.Join(p.Dir, ServerMetricsFile)
		if st, err := os.Stat(f); err == nil && st.Size() > 0 && (best < 0 || p.Config.Shard.Index < best) {
			best, path = p.Config.Shard.Index, f
		}
	}
	return path
}

// sizingText describes a recorded prompt sizing, "unrecorded" for none.
func sizingText(p *record.PromptSizing) string {
	if p == nil {
		return "unrecorded"
	}
	return p.String()
}

// mergeReplay is what the merge replays the global schedule of the shards' rate and trace
// levels from (sweep.Replay): the agreed start, the arrival process, and the trace, read
// again from the configured file when one of the first common levels replays it. A trace
// that does not read, or is not the one the shards replayed (its SHA-256), leaves the trace
// levels' scheduled times unchecked, with a warning.
func mergeReplay(ordered []*Run, common int) (*sweep.Replay, []string) {
	first := ordered[0]
	cfg := first.Config
	start, err := cfg.Shard.Start()
	if err != nil {
		return nil, []string{fmt.Sprintf("%s: %v: the rate levels' scheduled times are not checked", first.Dir, err)}
	}
	r := &sweep.Replay{Schedule: &sweep.Schedule{Start: start, Shards: len(ordered)}, Arrival: cfg.Sweep.ArrivalOf(cfg.Workload.Seed)}
	if !slices.ContainsFunc(first.Levels[:common], func(l record.Level) bool { return l.Run.TimeScale > 0 }) {
		return r, nil
	}
	t, err := workload.LoadTrace(cfg.Workload.Trace)
	switch {
	case err != nil:
		return r, []string{fmt.Sprintf("the trace levels' scheduled times are not checked (only their arrival indices): %v", err)}
	case first.Trace != nil && first.Trace.SHA256 != "" && t.Info.SHA256 != first.Trace.SHA256:
		return r, []string{fmt.Sprintf("the trace levels' scheduled times are not checked (only their arrival indices): %s is not the trace the shards replayed (SHA-256 %s, not %s)",
			t.Info.Path, t.Info.SHA256, first.Trace.SHA256)}
	}
	r.Trace = t
	return r, nil
}
