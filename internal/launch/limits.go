package launch

import (
	"errors"
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/sweep"
)

// checkLimits raises the soft RLIMIT_NOFILE to the hard limit and refuses, before anything is
// sent, a plan whose largest level this process cannot carry (selfcheck.Limits.Check: at most
// selfcheck.MaxProcessWorkers workers, the descriptors of its connections and the process's
// own, the memory its streams are estimated to take): one line per limit exceeded, exit 2.
//
// A rate sweep's levels run up to sweep.max_concurrency requests at once: when the user left
// it at its default, it is lowered to what the limits allow (fitDefaultCap; not on a shard,
// whose cap the other shards share), and a refusal names it, not sweep.levels or --shard
// (rateLimitLine). A shard carries its part of the cap (largestLevel).
func (s *Sweep) checkLimits() error {
	rate := s.Cfg.Sweep.RateMode()
	// The shards must agree on the cap: a shard's default is not fitted to its machine.
	if rate && !s.Cfg.Given("sweep.max_concurrency") && !s.Cfg.Shard.Sharded() {
		s.fitDefaultCap()
	}
	c, workers := s.largestLevel()
	err := selfcheck.ReadLimits().Check(c, workers, s.streamCost())
	if err == nil {
		return nil
	}
	for _, line := range limitLines(err) {
		if rate {
			line = rateLimitLine(line, c)
		}
		fmt.Fprintf(s.Log, "kneecap: %s\n", line)
	}
	return exit.Printed(exit.Usage)
}

// fitDefaultCap lowers a rate sweep's default cap on requests in flight to the largest that
// the process's limits allow (selfcheck.Limits.Check), saying so on the console; a cap of 1 that
// does not fit is left for checkLimits to refuse.
func (s *Sweep) fitDefaultCap() {
	limits, cost, cap := selfcheck.ReadLimits(), s.streamCost(), s.Cfg.Sweep.InFlightCap()
	err := limits.Check(cap, cap, cost)
	if err == nil || limits.Check(1, 1, cost) != nil {
		return
	}
	lo, hi := 1, cap // lo fits, hi does not
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; limits.Check(mid, mid, cost) == nil {
			lo = mid
		} else {
			hi = mid
		}
	}
	s.Cfg.Sweep.MaxConcurrency, s.Levels = lo, []int{lo}
	var short []string
	why := err.Error()
	if strings.Contains(why, "file descriptors") {
		short = append(short, fmt.Sprintf("file descriptors (RLIMIT_NOFILE %d)", limits.Descriptors))
	}
	if strings.Contains(why, "of memory") {
		short = append(short, "memory ("+limits.MemSource+")")
	}
	fmt.Fprintf(s.Log, "kneecap: rate sweep: at most %d requests in flight (sweep.max_concurrency), not the default %d, which needs more %s than this process has; set --max-concurrency to choose\n",
		lo, cap, strings.Join(short, " and "))
}

// rateLimitLine rewrites a line of selfcheck.Limits.Check about a rate sweep's cap on requests
// in flight, capacity c: it names sweep.max_concurrency and --max-concurrency, which set it,
// instead of a concurrency sweep's sweep.levels and --shard (the key that sets the cap).
func rateLimitLine(line string, c int) string {
	return strings.NewReplacer(
		fmt.Sprintf("concurrency %d ", c), fmt.Sprintf("max_concurrency %d (a rate level's cap on requests in flight) ", c),
		": lower sweep.levels, or split the level over processes with --shard I/N", ": lower sweep.max_concurrency (--max-concurrency)",
		", or lower sweep.levels", ", or lower sweep.max_concurrency (--max-concurrency)",
	).Replace(line)
}

// largestLevel returns the planned level that runs the most workers in this process (a
// shard runs its part of each) and that number.
func (s *Sweep) largestLevel() (concurrency, workers int) {
	sh := s.Cfg.Shard
	for _, c := range s.Levels {
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

// streamCost is what one worker of this sweep costs the process (selfcheck.CostOf): the
// in-process simulator holds the other end of every connection and its own buffers; a
// session's worker also its conversation's history (WorkloadConfig.SessionBytes).
func (s *Sweep) streamCost() selfcheck.StreamCost {
	_, out := s.Cfg.Workload.NominalLengths()
	record := s.Cfg.Sweep.RecordChunks == nil || *s.Cfg.Sweep.RecordChunks
	c := selfcheck.CostOf(s.Cfg.Target.URL == "", record, out)
	c.Bytes += s.Cfg.Workload.SessionBytes()
	return c
}

// limitLines returns the lines of an error of selfcheck.Limits.Check (one per limit).
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
	cost selfcheck.StreamCost
}

// Refine implements sweep.Refiner.
func (r limitedRefiner) Refine(levels []record.Level) (float64, string) {
	x, why := r.Refiner.Refine(levels)
	if x <= 0 {
		return x, why
	}
	c := int(x)
	if err := selfcheck.ReadLimits().Check(c, c, r.cost); err != nil {
		return 0, strings.TrimPrefix(strings.Join(limitLines(err), "; "), "sweep: ")
	}
	return x, why
}
