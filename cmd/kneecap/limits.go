package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/sweep"
)

// checkLimits raises the soft RLIMIT_NOFILE to the hard limit and refuses, before anything is
// sent, a plan whose largest level this process cannot carry (sweep.Limits.Check: at most
// sweep.MaxProcessWorkers workers, the descriptors of its connections and the process's
// own, the memory its streams are estimated to take): one line per limit exceeded, exit 2.
func (s *sweepPrep) checkLimits(e *env) error {
	c, workers := s.largestLevel()
	err := sweep.ReadLimits().Check(c, workers, s.streamCost())
	if err == nil {
		return nil
	}
	for _, line := range limitLines(err) {
		fmt.Fprintf(e.stderr, "kneecap: %s\n", line)
	}
	return &exitError{code: exitUsage}
}

// largestLevel returns the planned level that runs the most workers in this process (a
// shard runs its part of each) and that number.
func (s *sweepPrep) largestLevel() (concurrency, workers int) {
	sh := s.cfg.Shard
	for _, c := range s.levels {
		w := c
		if sh.Sharded() {
			_, w = sweep.Workers(c, sh.Index, sh.Count)
		}
		if w > workers || concurrency == 0 {
			concurrency, workers = c, w
		}
	}
	return concurrency, workers
}

// streamCost is what one worker of this sweep costs the process (sweep.CostOf): the
// in-process simulator holds the other end of every connection and its own buffers.
func (s *sweepPrep) streamCost() sweep.StreamCost {
	_, out := s.cfg.Workload.NominalLengths()
	record := s.cfg.Sweep.RecordChunks == nil || *s.cfg.Sweep.RecordChunks
	return sweep.CostOf(s.cfg.Target.URL == "", record, out)
}

// limitLines returns the lines of an error of sweep.Limits.Check (one per limit).
func limitLines(err error) []string {
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) {
		return []string{err.Error()}
	}
	var lines []string
	for _, e := range joined.Unwrap() {
		lines = append(lines, e.Error())
	}
	return lines
}

// limitedRefiner is the sweep's refiner with each added level checked against the process's
// limits, read again before it starts (the memory available may have shrunk since the plan
// was checked): a level that does not fit is not added, and adding stops with the reason.
type limitedRefiner struct {
	sweep.Refiner
	cost sweep.StreamCost
}

// Refine implements sweep.Refiner.
func (r limitedRefiner) Refine(levels []sweep.Level) (int, string) {
	c, why := r.Refiner.Refine(levels)
	if c <= 0 {
		return c, why
	}
	if err := sweep.ReadLimits().Check(c, c, r.cost); err != nil {
		return 0, strings.TrimPrefix(strings.Join(limitLines(err), "; "), "sweep: ")
	}
	return c, why
}
