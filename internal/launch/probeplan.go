package launch

import (
	"errors"
	"fmt"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// probeWindowCap caps the probe's measured window, however long one request takes: 60 s,
// three requests of 20 s (1,000 tokens at 20 ms each).
const probeWindowCap = 60 * time.Second

// probeProtocol is the protocol of the closed-loop probe of --rates auto: the sweep's, with
// short windows (at most 1 s warmup, 2 s measured, 4 s when not steady, 20 completions)
// widened to the pilot request's E2E e2e: the window at least 3 × e2e and up to twice that
// when not steady (capped at probeWindowCap), the warmup, which waits for every worker's
// first completion, up to 2 × e2e, so that a level can complete requests of a slow server
// in its window. Its stop rules are the sweep's plateau, overload, error-rate, TTFT and
// budget rules; it adds no levels.
func probeProtocol(p sweep.Protocol, e2e time.Duration) sweep.Protocol {
	q := p
	// A quick estimate: no added levels, no retries (a level excluded at the probe's
	// short windows costs its maximum QPS, which the other levels give).
	q.Mode, q.Rates, q.Refine, q.RetryExcluded = record.ModeConcurrency, sweep.RatesSpec{}, 0, 0
	wide := min(3*max(e2e, 0), probeWindowCap)
	q.Warmup = min(p.Warmup, time.Second)
	q.WarmupMax = max(q.Warmup, min(p.WarmupMax, 10*time.Second), min(2*e2e, 2*probeWindowCap))
	q.Duration = max(min(p.Duration, 2*time.Second), wide)
	q.MaxDuration = max(q.Duration, min(p.MaxDuration, 4*time.Second), 2*wide)
	q.MinRequests = min(p.MinRequests, 20)
	q.Cooldown = 0
	q.Stop = record.StopRules{Plateau: true, Overload: true, MaxErrorRate: p.Stop.MaxErrorRate,
		StopTTFT: p.Stop.StopTTFT, Budget: p.Stop.Budget}
	return q
}

// probeLevels are the probe's concurrencies: 1, 2, 4, … up to the rate levels' cap on
// requests in flight (at most 1,024); the plateau and overload rules end it once throughput
// stops growing.
func probeLevels(cap int) []int {
	var out []int
	for c := 1; c <= min(cap, 1024); c *= 2 {
		out = append(out, c)
	}
	return out
}

// probeOf finds the max QPS of closed-loop levels and plans the rates from it: the largest
// completion rate of a valid level (analysis.Level.CompletionRate) or, when no level is
// valid (too few completions in its window), the largest output TPS ÷ mean output tokens,
// nominalOut when no request of the level completed (Estimate says so).
func probeOf(levels []analysis.Level, nominalOut float64) (*Probe, error) {
	p := &Probe{Levels: levels}
	for i := range levels {
		lv := &levels[i]
		if lv.IsRate() {
			return nil, errors.New("an arrival-rate run: the max QPS is read from a closed-loop (concurrency) run")
		}
		if q := float64(lv.CompletionRate()); lv.Valid && lv.CompletionRate().OK() && q > p.MaxQPS {
			p.MaxQPS, p.MaxQPSConcurrency = q, lv.Concurrency
		}
	}
	if !(p.MaxQPS > 0) {
		p.estimate(nominalOut)
	}
	if !(p.MaxQPS > 0) {
		return nil, fmt.Errorf("no level of %d was valid or streamed output tokens, so there is no max QPS to plan rates from", len(levels))
	}
	p.Rates = sweep.PlanRates(p.MaxQPS)
	return p, nil
}

// estimate sets MaxQPS from the level of the largest completion rate (output TPS ÷ the mean
// output tokens of the requests served, user cancels among them: analysis.Level
// CompletionRate, as a valid level's), else of output TPS ÷ nominalOut where none of its
// requests was served, valid or not, and says so in Estimate.
func (p *Probe) estimate(nominalOut float64) {
	for i := range p.Levels {
		lv := &p.Levels[i]
		q, what := float64(lv.CompletionRate()), "its completion rate (output TPS ÷ its mean output tokens, user cancels counted as served)"
		if !lv.CompletionRate().OK() || !(q > 0) {
			t := float64(lv.OutputTPS)
			if !lv.OutputTPS.OK() || !(t > 0) || !(nominalOut > 0) {
				continue
			}
			q, what = t/nominalOut, fmt.Sprintf("its output TPS %.4g ÷ %.4g, the workload's nominal output tokens (none of its requests completed)", t, nominalOut)
		}
		if q > p.MaxQPS {
			p.MaxQPS, p.MaxQPSConcurrency = q, lv.Concurrency
			p.Estimate = fmt.Sprintf("no level was valid: estimated as concurrency %d's %.4g requests/s, %s", lv.Concurrency, q, what)
		}
	}
}
