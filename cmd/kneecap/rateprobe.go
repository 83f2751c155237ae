package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
)

// ProbeFile is the results directory's record of how the rates of --rates auto were planned:
// the probe's levels (or the --from run's) as analysis.json summarizes them, its max QPS and
// the rates planned from it. Its levels are not part of the rate run's analysis.
const ProbeFile = "probe.json"

// probe is the content of probe.json.
type probe struct {
	// From is the closed-loop results directory of --from; "" when kneecap probed.
	From string `json:"from,omitempty"`
	// MaxQPS is the largest completion rate of a valid level (output TPS ÷ mean output
	// tokens, the capacity's y on the rate axis), requests/s; MaxQPSConcurrency its level.
	MaxQPS            float64 `json:"max_qps"`
	MaxQPSConcurrency int     `json:"max_qps_concurrency"`
	// Rates are the offered rates planned from it (sweep.PlanRates).
	Rates []float64 `json:"rates"`
	// StopReason is why the probe stopped; Levels its levels.
	StopReason string           `json:"stop_reason,omitempty"`
	Levels     []analysis.Level `json:"levels"`
}

// probeProtocol is the protocol of the closed-loop probe of --rates auto: the sweep's, with
// windows of at most 1 s warmup, 2 s measured (4 s when not steady) and 20 completions, and
// no levels added.
func probeProtocol(p sweep.Protocol) sweep.Protocol {
	q := p
	q.Mode, q.Rates, q.Refine = sweep.ModeConcurrency, sweep.RatesSpec{}, 0
	q.Warmup = min(p.Warmup, time.Second)
	q.WarmupMax = max(q.Warmup, min(p.WarmupMax, 10*time.Second))
	q.Duration = min(p.Duration, 2*time.Second)
	q.MaxDuration = max(q.Duration, min(p.MaxDuration, 4*time.Second))
	q.MinRequests = min(p.MinRequests, 20)
	q.Cooldown = 0
	q.Stop = sweep.StopRules{Plateau: true, Overload: true, MaxErrorRate: p.Stop.MaxErrorRate, StopTTFT: p.Stop.StopTTFT}
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

// memSink keeps a sweep's levels in memory (the probe's are not part of the run).
type memSink struct{ levels []sweep.Level }

func (m *memSink) LevelDone(l sweep.Level) error { m.levels = append(m.levels, l); return nil }
func (m *memSink) Finish(string) error           { return nil }

// runProbe runs the closed-loop probe of --rates auto against the target and returns its
// result; an interrupt during it is exit 130 with nothing measured of the rate sweep.
func (s *sweepPrep) runProbe(ctx context.Context, e *env, t *target) (*probe, error) {
	levels := probeLevels(s.cfg.Sweep.InFlightCap())
	plan := sweep.Plan{Levels: levels, Protocol: probeProtocol(s.cfg.Sweep), Workload: s.workload,
		ThinkTime: s.cfg.Workload.ThinkTime}
	plan.Judge = analysis.StopRules{Rules: plan.Protocol.Stop}
	fmt.Fprintf(e.stderr, "kneecap: --rates auto: probing the max QPS closed-loop at concurrency %v (short windows; stops when throughput does)\n", levels)
	prog := newProgress(e.stderr, e.stderrTTY, levels, plan.Protocol)
	prog.width, prog.wide = e.columns, e.wide
	plan.Observer = prog
	sink := &memSink{}
	out, err := sweep.Run(ctx, e.interrupt, plan, t.client, sink)
	prog.close()
	if err != nil {
		return nil, fmt.Errorf("sweep: --rates auto: probe: %w", err)
	}
	if out.Interrupted {
		return nil, withCode(exitInterrupted, errors.New("sweep interrupted during the --rates auto probe: no rate level was run"))
	}
	p, err := probeOf(sink.levels, s.cfg.AnalysisOptions())
	if err != nil {
		return nil, withCode(exitUnreachable, fmt.Errorf("sweep: --rates auto: probe: %w", err))
	}
	p.StopReason = out.StopReason
	return p, nil
}

// probeOf summarizes closed-loop levels and plans the rates from their max QPS.
func probeOf(levels []sweep.Level, opts analysis.Options) (*probe, error) {
	p := &probe{Levels: analysis.Summarize(levels, opts)}
	for i := range p.Levels {
		lv := &p.Levels[i]
		if lv.IsRate() {
			return nil, errors.New("an arrival-rate run: the max QPS is read from a closed-loop (concurrency) run")
		}
		if q := float64(lv.CompletionRate()); lv.Valid && lv.CompletionRate().OK() && q > p.MaxQPS {
			p.MaxQPS, p.MaxQPSConcurrency = q, lv.Concurrency
		}
	}
	if !(p.MaxQPS > 0) {
		return nil, fmt.Errorf("no valid level of %d completed a request, so there is no max QPS to plan rates from", len(p.Levels))
	}
	p.Rates = sweep.PlanRates(p.MaxQPS)
	return p, nil
}

// probeFrom reads the max QPS of --from DIR, a closed-loop results directory.
func probeFrom(dir string, opts analysis.Options) (*probe, error) {
	res, err := rundir.Read(dir)
	if err != nil {
		return nil, usageError("sweep: --from: %w", err)
	}
	p, err := probeOf(res.Levels, opts)
	if err != nil {
		return nil, usageError("sweep: --from %s: %w", dir, err)
	}
	p.From, p.StopReason = dir, res.StopReason
	return p, nil
}

// readProbe reads probe.json of a resumed run of --rates auto, whose rates it planned.
func readProbe(dir string) (*probe, error) {
	b, err := os.ReadFile(filepath.Join(dir, ProbeFile))
	if err != nil {
		return nil, usageError("sweep: --resume %s: its rates were planned by --rates auto, and %s cannot be read: %v", dir, ProbeFile, err)
	}
	var p probe
	if err := json.Unmarshal(b, &p); err != nil || len(p.Rates) == 0 {
		return nil, usageError("sweep: --resume %s: %s holds no planned rates", dir, ProbeFile)
	}
	return &p, nil
}

// writeProbe writes probe.json into the results directory and says the max QPS and the rates.
func (s *sweepPrep) writeProbe(e *env, p *probe) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := rundir.WriteFileAtomic(filepath.Join(s.dir.Path(), ProbeFile), append(b, '\n')); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	from := "the probe"
	if p.From != "" {
		from = p.From
	}
	fmt.Fprintf(e.stderr, "kneecap: --rates auto: max QPS %.3g requests/s (%s, concurrency %d): offering %v requests/s (%s)\n",
		p.MaxQPS, from, p.MaxQPSConcurrency, p.Rates, ProbeFile)
	return nil
}
