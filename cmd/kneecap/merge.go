package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/sweep"
)

const mergeUsage = "SHARD_DIR... -o DIR\n\n" +
	"Merges the results directories of every shard of a sharded sweep (kneecap sweep --shard I/N\n" +
	"--start-at TIME; see docs/sharding.md) into one results directory DIR, as if one process\n" +
	"had run every worker: each level's records are the union of the shards', its window and\n" +
	"steady-state verdict are chosen again as one process would, and DIR gets the analysis,\n" +
	"charts and reports of `kneecap sweep`. Every shard must be given once; levels that not\n" +
	"every shard finished are left out, with a warning."

// cmdMerge runs `kneecap merge SHARD_DIR... -o DIR`. A missing or duplicate shard, shards of
// different sweeps, or an unreadable directory is a usage error (exit 2) naming the
// directories; DIR must not hold a run.
func cmdMerge(ctx context.Context, e *env, args []string) error {
	fset := newFlagSet(e, "merge", mergeUsage)
	out := fset.String("o", "", "results `DIR` for the merged sweep (required)")
	pos, err := parseArgs(fset, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		fset.Usage()
		return usageError("merge: no shard directories")
	}
	if *out == "" {
		fset.Usage()
		return usageError("merge: -o DIR is required")
	}
	interrupted := func() error {
		if ctx.Err() != nil || e.interrupt.Err() != nil {
			return withCode(exitInterrupted, errors.New("merge interrupted: nothing written"))
		}
		return nil
	}
	parts := make([]*sweep.Results, 0, len(pos))
	for _, p := range pos {
		if err := interrupted(); err != nil {
			return err
		}
		res, err := sweep.ReadResults(p)
		if err != nil {
			return usageError("merge: %w", err)
		}
		parts = append(parts, res)
	}
	merged, warnings, err := sweep.MergeShards(parts)
	if err != nil {
		for _, p := range sweep.Problems(err) {
			fmt.Fprintf(e.stderr, "kneecap: merge: %s\n", strings.TrimPrefix(p, "merge: "))
		}
		return &exitError{code: exitUsage}
	}
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "kneecap: merge: warning: %s\n", w)
	}
	if err := interrupted(); err != nil {
		return err
	}
	if _, err := checkWritable(*out, "choose another -o"); err != nil {
		return usageError("merge: %w", err)
	}
	if err := writeMerged(*out, merged, parts); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	fmt.Fprintf(e.stderr, "kneecap: merged %d shards (%d levels, %d requests) into %s\n",
		merged.Shards, len(merged.Levels), len(merged.Records), *out)
	return afterSweep(e, *out, merged.Config)
}

// writeMerged writes merged into the new results directory dir: config.yaml, records.jsonl
// and levels.json level by level, and the server metrics of the lowest-numbered shard that
// scraped them.
func writeMerged(dir string, merged *sweep.Results, parts []*sweep.Results) (err error) {
	d, err := sweep.CreateDir(dir, merged.Config, merged.Endpoint, merged.Start)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, d.Close()) }()
	d.SetMerged(merged.Shards)
	// Shard 0's record of the server: only shard 0 asks it.
	var info []byte
	for _, p := range parts {
		if p.Config.Shard.Index == 0 {
			info, _ = os.ReadFile(filepath.Join(p.Dir, sweep.ServerInfoFile))
		}
	}
	if err := d.SetProvenance(merged.Kneecap, merged.Server, info); err != nil {
		return err
	}
	for _, l := range sweep.GroupRecords(merged.Levels, merged.Records) {
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
// non-empty one ("" when none has): every shard scrapes the same server.
func shardMetrics(parts []*sweep.Results) string {
	best, path := -1, ""
	for _, p := range parts {
		f := filepath.Join(p.Dir, sweep.ServerMetricsFile)
		if st, err := os.Stat(f); err == nil && st.Size() > 0 && (best < 0 || p.Config.Shard.Index < best) {
			best, path = p.Config.Shard.Index, f
		}
	}
	return path
}
