package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/rundir"
)

const mergeUsage = "SHARD_DIR... -o DIR\n\n" +
	"Merges the results directories of every shard of a sharded sweep (kneecap sweep --shard I/N\n" +
	"--start-at TIME; see docs/sharding.md) into one results directory DIR, as if one process\n" +
	"had run every worker (a rate or trace level: sent every arrival of its one schedule, each\n" +
	"shard's times moved onto the reference clock and checked against the schedule): each\n" +
	"level's records are the union of the shards', its window and steady-state verdict are\n" +
	"chosen again as one process would, and DIR gets the analysis, charts and reports of\n" +
	"`kneecap sweep`. Every shard must be given once; levels that not every shard finished\n" +
	"are left out, with a warning."

// cmdMerge runs `kneecap merge SHARD_DIR... -o DIR`. A missing or duplicate shard, shards of
// different sweeps, or an unreadable directory is a usage error (exit 2) naming the
// directories; DIR must not hold a run.
func cmdMerge(ctx context.Context, e *env, args []string) error {
	ctx, release := untilInterrupt(ctx, e)
	defer release()
	fset := newFlagSet(e, "merge", mergeUsage)
	out := fset.String("o", "", "results `DIR` for the merged sweep (required)")
	pos, err := parseArgs(fset, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return cmdUsageError("merge", "merge: no shard directories")
	}
	if *out == "" {
		return cmdUsageError("merge", "merge: -o DIR is required")
	}
	if _, err := os.Stat(*out); err == nil { // refused before the shards are read
		if _, err := rundir.CheckWritable(*out, "choose another -o"); err != nil {
			return usageError("merge: %w", err)
		}
	}
	parts := make([]*rundir.Run, 0, len(pos))
	for _, p := range pos {
		if err := interruptError(ctx, "merge", nothingWritten); err != nil {
			return err
		}
		res, err := rundir.ReadContext(ctx, p)
		if err := interruptError(ctx, "merge", nothingWritten); err != nil {
			return err
		}
		if err != nil {
			return usageError("merge: %w", err)
		}
		if why := res.MissingRecords(); why != "" {
			return usageError("merge: %s: %s: its part of the load is gone", p, why)
		}
		if d := res.Dropped.String(); d != "" {
			fmt.Fprintf(e.stderr, "kneecap: merge: warning: %s: %s\n", filepath.Join(p, rundir.RecordsFile), d)
		}
		parts = append(parts, res)
	}
	merged, warnings, err := rundir.Merge(ctx, parts)
	if err := interruptError(ctx, "merge", nothingWritten); err != nil {
		return err
	}
	if err != nil {
		for _, p := range config.Problems(err) {
			fmt.Fprintf(e.stderr, "kneecap: merge: %s\n", strings.TrimPrefix(p, "merge: "))
		}
		return exit.Printed(exitUsage)
	}
	for _, w := range warnings {
		fmt.Fprintf(e.stderr, "kneecap: merge: warning: %s\n", w)
	}
	if _, err := rundir.CheckWritable(*out, "choose another -o"); err != nil {
		return usageError("merge: %w", err)
	}
	if err := rundir.WriteMerged(*out, merged, parts); err != nil {
		return fmt.Errorf("merge: %w", err)
	}
	fmt.Fprintf(e.stderr, "kneecap: merged %d shards (%d levels, %d requests) into %s\n",
		merged.Shards, len(merged.Levels), len(merged.Records()), *out)
	if merged.Clocks != "" {
		fmt.Fprintf(e.stderr, "kneecap: merge: %s\n", merged.Clocks)
	}
	return afterSweep(ctx, e, "merge", *out)
}
