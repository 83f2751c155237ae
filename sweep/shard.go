package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Schedule fixes every level of a sweep to the wall clock, so that several load generators
// (the shards of ShardConfig) run the same level at the same time without talking to each
// other. Level k (from 0) starts at Start + k × Period; its warmup lasts exactly Warmup and the load
// runs for the longest window, max(Duration, MaxDuration), then requests in flight
// DrainTimeout later are cancelled. No shard can tell alone whether the level is steady, so
// MergeShards chooses the window afterwards exactly as one process would have: the shortest
// window of at least Duration (whole slices) with MinRequests completions that passes the
// steady-state test on the union of the shards' records. Stop rules other than the budget
// cannot be agreed on and are not applied.
type Schedule struct {
	// Start is when level 0 starts on every shard.
	Start time.Time
	// Shard and Shards say which part of each level's workers this process runs.
	Shard, Shards int
}

// ScheduleSlack is added to every level of a schedule after its drain, for writing the level's
// records and results before the next level is due.
const ScheduleSlack = time.Second

// Period is the time between the starts of two levels: warmup + the longest window +
// drain_timeout + cooldown + ScheduleSlack.
func (s *Schedule) Period(p Protocol) time.Duration {
	return p.Warmup + scheduledWindow(p) + p.DrainTimeout + p.Cooldown + ScheduleSlack
}

// LevelEnd is when level k's drain ends at the latest: its load ends drain_timeout before.
func (s *Schedule) LevelEnd(p Protocol, k int) time.Time {
	return s.LevelStart(p, k).Add(p.Warmup + scheduledWindow(p) + p.DrainTimeout)
}

// scheduledWindow is how long a shard loads the server after warmup: the longest window the
// one-process controller measures, max_duration (at least duration) in whole slices.
func scheduledWindow(p Protocol) time.Duration {
	slice := p.Duration / MinSlices
	if slice <= 0 {
		return p.Duration
	}
	return slice * time.Duration(maxSlices(p))
}

// maxSlices is the longest window in slices of duration ÷ MinSlices: max_duration, at least
// MinSlices (duration). p.Duration must be at least MinSlices nanoseconds.
func maxSlices(p Protocol) int {
	return max(MinSlices, int(p.MaxDuration/(p.Duration/MinSlices)))
}

// LevelStart is when level k starts.
func (s *Schedule) LevelStart(p Protocol, k int) time.Time {
	return s.Start.Add(time.Duration(k) * s.Period(p))
}

// Workers returns the workers of a level of concurrency c that shard i of n runs:
// first, first+1, …, first+count-1. The shards' ranges tile 0 … c-1 in order and differ in
// size by at most one.
func Workers(c, i, n int) (first, count int) {
	first = i * c / n
	return first, (i+1)*c/n - first
}

// ShardPart describes a shard's part of a level (LevelRun.Shard).
type ShardPart struct {
	// Index and Count are the shard's number and the number of shards.
	Index int `json:"index"`
	Count int `json:"count"`
	// FirstWorker and Workers are the shard's workers: FirstWorker … FirstWorker+Workers-1
	// of the level's Concurrency.
	FirstWorker int `json:"first_worker"`
	Workers     int `json:"workers"`
}

// warmupLateNote starts a shard's note that some of its workers had not completed a request
// by the scheduled end of warmup (the merge then starts the window later: see mergeLevel).
const warmupLateNote = "at the scheduled end of warmup"

// MergeShards combines the results of every shard of one sharded sweep (ShardConfig) into the
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
// kept and marked interrupted, so the analysis treats it as invalid. The result's Config has
// no shard section, and its Shards counts the parts.
func MergeShards(parts []*Results) (*Results, []string, error) {
	if len(parts) == 0 {
		return nil, nil, errors.New("merge: no shard results")
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	byIndex := map[int]*Results{}
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
		return nil, nil, err
	}
	ordered := make([]*Results, n)
	for i := range n {
		ordered[i] = byIndex[i]
	}

	first := ordered[0]
	if d := first.Config.Sweep.Duration; d < MinSlices {
		return nil, nil, fmt.Errorf("merge: %s: sweep.duration %s is shorter than its %d slices", first.Dir, d, MinSlices)
	}
	cfg := first.Config
	cfg.Shard = ShardConfig{}
	cfg.Output.Dir = ""
	out := &Results{
		Config:   cfg,
		Start:    first.Start,
		Endpoint: first.Endpoint,
		Shards:   n,
		Kneecap:  first.Kneecap,
		Server:   first.Server,
	}
	var warnings []string
	for _, p := range ordered[1:] {
		if p.Kneecap != first.Kneecap {
			warnings = append(warnings, fmt.Sprintf("shard %s ran kneecap %q, shard %s %q: the load generators differ",
				p.Config.Shard, p.Kneecap, first.Config.Shard, first.Kneecap))
		}
	}
	// Server metrics are summarised again over the merged window from the shard's
	// server_metrics.jsonl (the shard summarised its whole load period), read once.
	samples := map[int][]MetricSample{}
	server := func(shard int, w0, w1 int64) (*ServerStats, error) {
		s, ok := samples[shard]
		if !ok {
			var err error
			if s, err = ReadServerMetrics(filepath.Join(ordered[shard].Dir, ServerMetricsFile)); err != nil {
				return nil, err
			}
			samples[shard] = s
		}
		return summarize(s, w0, w1), nil
	}
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
			warnings = append(warnings, fmt.Sprintf("level %d (concurrency %d) left out: shard %s finished it, but not every shard did",
				l.Index+1, l.Concurrency, p.Config.Shard))
		}
	}
	recs := make([][][]Record, n) // by shard, then by level position
	for i, p := range ordered {
		pos := map[int]int{}
		for j, l := range p.Levels[:common] {
			pos[l.Index] = j
		}
		recs[i] = make([][]Record, common)
		for _, r := range p.Records {
			if j, ok := pos[r.Level]; ok {
				recs[i][j] = append(recs[i][j], r)
			}
		}
	}
	for j := range common {
		parts := make([]LevelRun, n)
		var records []Record
		for i, p := range ordered {
			parts[i] = p.Levels[j]
			records = append(records, recs[i][j]...)
		}
		run, err := mergeLevel(parts, records, cfg.Sweep, server)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		out.Levels = append(out.Levels, run)
		out.Records = append(out.Records, records...)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, nil, err
	}

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
		out.StopReason = order[0]
	} else {
		var b []string
		for _, r := range order {
			b = append(b, fmt.Sprintf("shard %s: %s", strings.Join(reasons[r], ", "), r))
		}
		out.StopReason = strings.Join(b, "; ")
	}
	return out, warnings, nil
}

// shardLevels describes how many levels each shard finished: "shard 0/2: 3 levels".
func shardLevels(parts []*Results) []string {
	out := make([]string, len(parts))
	for i, p := range parts {
		out[i] = fmt.Sprintf("shard %s: %d levels", p.Config.Shard, len(p.Levels))
	}
	return out
}

// mergeLevel merges the shards' parts of one level (parts in shard order) with the union of
// their records, which it sorts by send time. server summarises a shard's server metrics over
// a window.
func mergeLevel(parts []LevelRun, records []Record, proto Protocol, server func(shard int, w0, w1 int64) (*ServerStats, error)) (LevelRun, error) {
	p0 := parts[0]
	ref := -1 // the first shard that ran the level to its scheduled end: the others must agree
	for i, p := range parts {
		if !p.Interrupted {
			ref = i
			break
		}
	}
	name := fmt.Sprintf("merge: level %d (concurrency %d)", p0.Index+1, p0.Concurrency)
	run := LevelRun{
		Index: p0.Index, Concurrency: p0.Concurrency,
		WarmupStart: p0.WarmupStart, W0: p0.W0, W1: p0.W1, DrainEnd: p0.DrainEnd,
	}
	interrupted := false
	next := 0 // the next worker the shards' ranges must cover
	var boundWhy []string
	var cs *ClientStats
	for i, p := range parts {
		if p.Index != p0.Index || p.Concurrency != p0.Concurrency {
			return run, fmt.Errorf("%s: shard %d/%d has level %d at concurrency %d here", name, i, len(parts), p.Index+1, p.Concurrency)
		}
		if p.Shard == nil || p.Shard.Index != i || p.Shard.FirstWorker != next {
			return run, fmt.Errorf("%s: shard %d/%d's part does not continue the workers at %d", name, i, len(parts), next)
		}
		next += p.Shard.Workers
		interrupted = interrupted || p.Interrupted
		run.WarmupStart = min(run.WarmupStart, p.WarmupStart)
		run.DrainEnd = max(run.DrainEnd, p.DrainEnd)
		run.W0 = max(run.W0, p.W0)
		run.W1 = min(run.W1, p.W1)
		run.Cancelled += p.Cancelled
		if r := parts[max(ref, 0)]; !p.Interrupted && (p.W0 != r.W0 || p.W1 != r.W1) {
			return run, fmt.Errorf("%s: shard %d/%d's window [%d, %d) differs from shard %d/%d's [%d, %d): not one schedule",
				name, i, len(parts), p.W0, p.W1, ref, len(parts), r.W0, r.W1)
		}
		// Client diagnostics cover each shard's whole load period, not only the merged
		// window: CPU and scheduling latency are not kept per slice.
		if c := p.Client; c != nil {
			if cs == nil {
				cs = &ClientStats{}
			}
			cs.CPUUtilization = max(cs.CPUUtilization, c.CPUUtilization)
			cs.SchedLatencyP99 = max(cs.SchedLatencyP99, c.SchedLatencyP99)
			cs.RunQueueDelay = max(cs.RunQueueDelay, c.RunQueueDelay)
			if c.Bound {
				boundWhy = append(boundWhy, fmt.Sprintf("shard %d/%d: %s", i, len(parts), c.Reason))
			}
		}
	}
	if next != p0.Concurrency {
		return run, fmt.Errorf("%s: the shards run %d workers, not %d", name, next, p0.Concurrency)
	}
	run.W1 = max(run.W1, run.W0)
	sort.SliceStable(records, func(a, b int) bool { return records[a].Sent < records[b].Sent })
	var notes []string
	if run.Cancelled > 0 {
		notes = append(notes, fmt.Sprintf("%d requests still in flight at the scheduled end of the drain were cancelled", run.Cancelled))
	}
	end := endNormal
	if interrupted {
		end = endInterrupt
	}
	slice := int64(proto.Duration) / MinSlices
	if !interrupted {
		// One process ends its warmup only when every worker has completed a request; a
		// shard cannot wait for the others, so the window starts at the first slice boundary
		// after the last worker's first completion (its first request, whatever its status).
		first := map[int]int64{}
		for i := range records {
			if r := &records[i]; r.Seq == 0 {
				first[r.Worker] = r.Done()
			}
		}
		late, last := 0, run.W0
		for _, d := range first {
			if d > run.W0 {
				late++
				last = max(last, d)
			}
		}
		if late > 0 {
			w0 := min(run.W0+(last-run.W0+slice-1)/slice*slice, run.W1)
			notes = append(notes, fmt.Sprintf("window starts %s after the scheduled end of warmup: %d of %d workers had not completed a request by then (one process extends its warmup until every worker has)",
				time.Duration(w0-run.W0), late, p0.Concurrency))
			run.W0 = w0
		}
	}
	if kmax := int((run.W1 - run.W0) / slice); !interrupted && kmax >= MinSlices {
		// The shards loaded the server for the longest window; the window is the shortest
		// steady one with min_requests completions, as the one-process controller decides,
		// among the windows it could have tested: those ending before the oldest request in
		// flight when its longest window ended (its horizon then).
		horizon := run.W1
		for i := range records {
			if r := &records[i]; r.Sent < run.W1 && r.Done() > run.W1 {
				horizon = min(horizon, r.Sent)
			}
		}
		win := newWindow(run.W0, slice, MinSlices, kmax)
		for i := range records {
			win.add(&records[i])
		}
		if k := win.decide(horizon, proto.MinRequests, proto.CITarget); k > 0 {
			run.W1 = run.W0 + slice*int64(k)
		}
	}
	setPhases(records, run.W0, run.W1)
	for i, p := range parts {
		if p.Server == nil {
			continue
		}
		run.Server = p.Server
		if p.W0 != run.W0 || p.W1 != run.W1 {
			st, err := server(i, run.W0, run.W1)
			switch {
			case err != nil:
				notes = append(notes, fmt.Sprintf("server metrics over shard %d/%d's whole load period (re-reading them failed: %v)", i, len(parts), err))
			case st != nil:
				st.Series = p.Server.Series // the file does not record them
				run.Server = st
			}
		}
		break
	}
	notes = append(notes, finishWindow(&run, records, proto, slice, end)...)
	if cs != nil && run.W1 > run.W0 {
		cs.ConnWaitP99 = connWaitP99(records, run.W0, run.W1)
		cs.classify()
		if len(boundWhy) > 0 {
			if cs.Reason != "" {
				boundWhy = append([]string{"merged: " + cs.Reason}, boundWhy...)
			}
			cs.Bound, cs.Reason = true, strings.Join(boundWhy, "; ")
		}
		run.Client = cs
		if cs.Bound {
			notes = append(notes, "client-bound: "+cs.Reason+"; the numbers may describe the load generator, not the server")
		}
	}
	run.Notes = notes
	return run, nil
}

// configDiff names the sections (top-level keys) of two shards' configurations that differ
// in what loads the server, ignoring shard.index and output.dir, which differ between shards
// by design, and slo, analysis and plan, which only the analysis of the merge uses (the
// first shard's). start_at is compared as an instant.
func configDiff(a, b Config) []string {
	for _, c := range []*Config{&a, &b} {
		c.Shard.Index, c.Output.Dir = 0, ""
		c.SLO, c.Analysis, c.Plan = SLOConfig{}, AnalysisConfig{}, PlanConfig{}
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

// ShardDirName is the default results directory suffix of a shard: "shard-i-of-N".
func ShardDirName(s ShardConfig) string {
	return fmt.Sprintf("shard-%d-of-%d", s.Index, s.Count)
}

// errNotMerged is wrapped by CheckNotShard.
var errNotMerged = errors.New("one shard of a sharded sweep holds a part of every level's load: merge the shards first (kneecap merge SHARD_DIR... -o DIR)")

// CheckNotShard returns an error when res is one shard of a sharded sweep: analyzing it alone
// would attribute the whole level's concurrency to a part of its load.
func CheckNotShard(res *Results) error {
	if res.Config.Shard.Sharded() {
		return fmt.Errorf("%s is shard %s: %w", res.Dir, res.Config.Shard, errNotMerged)
	}
	return nil
}
