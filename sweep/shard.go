package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

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
		run, err := MergeLevel(parts, records, cfg.Sweep, server)
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
