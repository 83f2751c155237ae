package launch

import (
	"cmp"
	"fmt"
	"strconv"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// Display is a sweep's console display: its Observer, which the refiner also tells what it
// adds (Adding, AddingRate) or why it adds no more (StopAdding).
type Display interface {
	sweep.Observer
	// Adding announces the next added level, or that none is needed (c = 0).
	Adding(c int, why string)
	// AddingRate announces the next added rate level, or that none is needed (rps = 0).
	AddingRate(rps float64, why string)
	// StopAdding says why no further level is added (an added level failed).
	StopAdding(why string)
}

// Plan builds the sweep's plan with display as its Observer, and prints how a shard's levels
// are scheduled and where a resumed run continues.
func (s *Sweep) Plan(display Display) sweep.Plan {
	cfg := s.Cfg
	plan := sweep.Plan{
		Levels:    s.Levels,
		Protocol:  cfg.Sweep,
		Workload:  s.sent(),
		ThinkTime: cfg.Workload.ThinkTime,
		Judge:     analysis.StopRules{Rules: cfg.Sweep.Stop, API: cfg.Target.API},
		Observer:  display,
		Schedule:  s.schedule,

		AnswerBudget: s.levelBudget(),
	}
	if cfg.Sweep.RateMode() {
		s.ratePlan(&plan, display)
	}
	if s.schedule != nil {
		plan.Judge = nil                   // the shards cannot agree on stop rules other than the budget
		plan.Refiner, plan.Refine = nil, 0 // nor on added levels (config refuses sweep.refine)
		fmt.Fprintln(s.Log, "kneecap: "+s.schedule.Describe(cfg.Sweep, len(s.planned()), cfg.Shard.String())+
			" "+sweep.ClockPlan(cfg.Shard.ClockServer))
	} else if !cfg.Sweep.RateMode() && cfg.Sweep.Refine > 0 {
		refiner := limitedRefiner{analysis.NewRefiner(cfg.AnalysisOptions(), cfg.Sweep.Stop), s.streamCost()}
		plan.Refiner = announcingRefiner{refiner, display, false}
		plan.Refine = cfg.Sweep.Refine
	}
	if s.done == nil {
		return plan
	}
	plan.StartIndex, plan.Done = s.Resume.StartIndex, s.done.Levels
	if s.Resume.PlannedOver {
		stopped := ""
		if s.Resume.Stopped != "" {
			stopped = " (stopped: " + s.Resume.Stopped + ")"
		}
		fmt.Fprintf(s.Log, "kneecap: resuming %s after its planned levels%s: %d of at most %d levels added so far\n",
			s.Dir.Path(), stopped, s.Resume.Added, cfg.Sweep.Refine)
	} else {
		fmt.Fprintf(s.Log, "kneecap: resuming %s at level %d of %d (%s)\n",
			s.Dir.Path(), plan.StartIndex+1, len(s.planned()), s.levelName(plan.StartIndex))
	}
	return plan
}

// What names the levels the sweep is about to run: "levels [1 2 4], then up to 2 added".
func (s *Sweep) What(plan sweep.Plan) string {
	what := fmt.Sprintf("levels %v", s.Levels[min(plan.StartIndex, len(s.Levels)):])
	if s.trace != nil {
		what = s.traceWhat(plan.StartIndex)
	} else if s.Cfg.Sweep.RateMode() {
		what = fmt.Sprintf("rates %v requests/s (%s arrivals, at most %d in flight)",
			s.Rates[min(plan.StartIndex, len(s.Rates)):], cmp.Or(s.Cfg.Sweep.Arrival, sweep.ArrivalPoisson), s.Cfg.Sweep.InFlightCap())
	}
	if plan.Refine > 0 {
		left := plan.Refine - s.Resume.Added
		what += fmt.Sprintf(", then up to %d added", left)
		if plan.StartIndex >= len(s.planned()) {
			what = fmt.Sprintf("up to %d added levels", left)
		}
	}
	return what
}

// ratePlan makes plan a rate sweep: its rates, arrival process, cap and refiner.
func (s *Sweep) ratePlan(plan *sweep.Plan, display Display) {
	cfg := s.Cfg
	plan.Levels = nil
	plan.Rates = s.Rates
	plan.Arrival = cfg.Sweep.ArrivalOf(cfg.Workload.Seed)
	plan.MaxConcurrency = cfg.Sweep.MaxConcurrency
	plan.Trace = s.trace
	if b := cfg.Sweep.Stop.Budget; b > 0 { // the probe spent part of it
		plan.Protocol.Stop.Budget = max(b-s.probeElapsed, time.Nanosecond)
	}
	if cfg.Sweep.Refine > 0 {
		plan.Refiner = announcingRefiner{analysis.NewRefiner(cfg.AnalysisOptions(), cfg.Sweep.Stop), display, true}
		plan.Refine = cfg.Sweep.Refine
	}
}

// planned returns the planned levels: the rates of a rate sweep, else the concurrencies.
func (s *Sweep) planned() []float64 {
	if s.Cfg.Sweep.RateMode() {
		return s.Rates
	}
	out := make([]float64, len(s.Levels))
	for i, c := range s.Levels {
		out[i] = float64(c)
	}
	return out
}

// levelName names planned level i: "concurrency 8", "12.5 requests/s".
func (s *Sweep) levelName(i int) string {
	if s.Cfg.Sweep.RateMode() {
		return strconv.FormatFloat(s.Rates[i], 'g', -1, 64) + " requests/s"
	}
	return "concurrency " + strconv.Itoa(s.Levels[i])
}

// ExpectsPrefixCache reports whether the sweep is one a prefix cache serves, so the live
// level table shows the hit column from its first level (which may measure none yet):
// shared_prefix, prefix_cache, sessions, a trace with hash_ids, or the simulator with
// prefix_caching.
func (s *Sweep) ExpectsPrefixCache() bool { return expectsPrefixCache(&s.Cfg, s.workload) }

func expectsPrefixCache(cfg *config.Config, w workload.Workload) bool {
	wl := cfg.Workload
	if wl.SharedPrefix.Count > 0 || wl.PrefixCache || wl.Sessions != nil || cfg.Target.URL == "" && cfg.Simulator.PrefixCaching {
		return true
	}
	tw, ok := w.(*workload.TraceWorkload)
	return ok && tw.Trace().Info.BlockTokens > 0
}

// announcingRefiner is the sweep's refiner (analysis.Refiner) that says on the display which
// level it adds and why — a concurrency, or a rate on an arrival-rate sweep — or why it adds
// none.
type announcingRefiner struct {
	sweep.Refiner
	display Display
	rate    bool
}

// Refine implements sweep.Refiner.
func (r announcingRefiner) Refine(levels []record.Level) (float64, string) {
	x, why := r.Refiner.Refine(levels)
	switch {
	case x <= 0 && why != "":
		r.display.StopAdding(why)
	case r.rate:
		r.display.AddingRate(x, why)
	default:
		r.display.Adding(int(x), why)
	}
	return x, why
}

// sent is the workload the sweep's levels send: the sized workload with workload.cancel
// applied (the pilot request of --rates auto is never cancelled).
func (s *Sweep) sent() workload.Workload { return workload.WithCancel(s.workload, s.Cfg.Workload) }
