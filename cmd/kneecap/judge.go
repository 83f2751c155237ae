package main

import (
	"fmt"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/summary"
	"github.com/kneecap/kneecap/sweep"
)

// Stop-rule thresholds of DESIGN §3.
const (
	// plateauGain is the largest relative TPS gain per step that counts as no gain.
	plateauGain = 0.05
	// plateauTTFT is the TTFT p50 growth over the first level that confirms saturation.
	plateauTTFT = 3.0
	// overloadFraction: TPS below this share of the best level is overload.
	overloadFraction = 0.90
)

// ruleJudge applies DESIGN §3's stop rules to the levels' measurement windows.
type ruleJudge struct {
	stop sweep.StopRules
}

// sweepJudge returns the sweep's stop-rule judge for cfg.
func sweepJudge(cfg sweep.Config) sweep.Judge {
	return ruleJudge{stop: cfg.Sweep.Stop}
}

// Decide returns why the sweep should stop after the last level, or "". Interrupted levels
// are ignored. Rules, in order: error rate above max_error_rate; TTFT p95 above stop_ttft;
// overload (TPS below 90% of the best level); plateau (TPS gained < 5% on each of the last two
// steps and TTFT p50 ≥ 3× the first level's).
func (j ruleJudge) Decide(levels []sweep.Level) string {
	var sums []levelSummary
	for _, l := range levels {
		if l.Run.Interrupted {
			continue
		}
		sums = append(sums, summarizeLevel(l))
	}
	if len(sums) == 0 {
		return ""
	}
	last := sums[len(sums)-1]
	if last.Requests > 0 && last.ErrorRate > j.stop.MaxErrorRate {
		return fmt.Sprintf("error rate %.1f%% at concurrency %d is above max_error_rate %.1f%%",
			100*last.ErrorRate, last.Concurrency, 100*j.stop.MaxErrorRate)
	}
	if j.stop.StopTTFT > 0 && last.TTFTP95 > j.stop.StopTTFT {
		return fmt.Sprintf("TTFT p95 %s at concurrency %d is above stop_ttft %s",
			last.TTFTP95.Round(time.Millisecond), last.Concurrency, j.stop.StopTTFT)
	}
	if j.stop.Overload && len(sums) >= 2 {
		best := sums[0]
		for _, s := range sums[:len(sums)-1] {
			if s.OutputTPS > best.OutputTPS {
				best = s
			}
		}
		if last.OutputTPS < overloadFraction*best.OutputTPS {
			return fmt.Sprintf("overload: %.0f tokens/s at concurrency %d is %.0f%% below the best, %.0f tokens/s at %d",
				last.OutputTPS, last.Concurrency, 100*(1-last.OutputTPS/best.OutputTPS), best.OutputTPS, best.Concurrency)
		}
	}
	if j.stop.Plateau && len(sums) >= 3 {
		a, b, c := sums[len(sums)-3], sums[len(sums)-2], sums[len(sums)-1]
		first := sums[0]
		flat := b.OutputTPS < (1+plateauGain)*a.OutputTPS && c.OutputTPS < (1+plateauGain)*b.OutputTPS
		if flat && first.TTFTP50 > 0 && float64(c.TTFTP50) >= plateauTTFT*float64(first.TTFTP50) {
			return fmt.Sprintf("plateau: throughput gained < %.0f%% from concurrency %d to %d and %d, TTFT p50 %s is %.1f× the first level's",
				100*plateauGain, a.Concurrency, b.Concurrency, c.Concurrency, c.TTFTP50.Round(time.Millisecond),
				float64(c.TTFTP50)/float64(first.TTFTP50))
		}
	}
	return ""
}

// refiner adds levels after the planned ones (sweep.refine): it summarizes every level so far
// as the run's analysis will, and asks analysis.Refinement where an answer (the SLO limit,
// the knee, the TTFT blow-up) lies farthest from a measured level.
type refiner struct {
	opts analysis.Options
	stop sweep.StopRules
	prog *progress
}

// sweepRefiner returns the refiner of a sweep run with cfg, reporting to prog.
func sweepRefiner(cfg sweep.Config, prog *progress) refiner {
	opts := summary.ConfigOptions(cfg)
	opts.Bootstrap = 0 // intervals do not move the answers, only their error bars
	return refiner{opts: opts, stop: cfg.Sweep.Stop, prog: prog}
}

// Refine implements sweep.Refiner. An added level that failed the error-rate or stop_ttft
// rule stops the adding: the server changed (or broke) since the planned levels, and more
// load would only repeat the failure.
func (r refiner) Refine(levels []sweep.Level) (int, string) {
	if n := len(levels) - 1; n >= 0 && levels[n].Run.Refine != "" && !levels[n].Run.Interrupted {
		s := summarizeLevel(levels[n])
		why := ""
		switch {
		case s.Requests > 0 && s.ErrorRate > r.stop.MaxErrorRate:
			why = fmt.Sprintf("added level concurrency %d had error rate %.1f%%, above max_error_rate %.1f%%",
				s.Concurrency, 100*s.ErrorRate, 100*r.stop.MaxErrorRate)
		case r.stop.StopTTFT > 0 && s.TTFTP95 > r.stop.StopTTFT:
			why = fmt.Sprintf("added level concurrency %d had TTFT p95 %s, above stop_ttft %s",
				s.Concurrency, s.TTFTP95.Round(time.Millisecond), r.stop.StopTTFT)
		}
		if why != "" {
			r.prog.stopAdding(why)
			return 0, why
		}
	}
	attempted := make([]int, len(levels))
	for i, l := range levels {
		attempted[i] = l.Run.Concurrency
	}
	res := analysis.Analyze(analysis.Summarize(levels, r.opts), analysis.Meta{}, r.opts)
	c, why := analysis.Refinement(&res, attempted)
	r.prog.adding(c, why)
	return c, why
}
