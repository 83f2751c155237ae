package launch

import (
	"cmp"
	"context"
	"fmt"

	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// planRates returns the streams a rate sweep's levels need (its cap on requests in flight)
// and sets its rates: given, a trace's time scales (planTrace), read back from probe.json on
// --resume of --rates auto, read from --from DIR, or left nil for the probe (autoRates) once
// the target is up.
func (s *Sweep) planRates() ([]int, error) {
	sw := s.Cfg.Sweep
	if s.Cfg.Workload.Trace.Enabled() {
		return s.planTrace()
	}
	levels := []int{sw.InFlightCap()}
	switch {
	case sw.Rates.Auto && s.from == "" && s.Cfg.Shard.Sharded():
		return nil, errShardAuto(s.Cfg.Shard.String())
	case !sw.Rates.Auto:
		rates, err := sw.Rates.Rates()
		s.Rates = rates
		return levels, err
	case s.done != nil:
		p, err := ReadProbe(s.done.Dir)
		switch {
		case err != nil:
			return nil, err
		case p == nil && len(s.done.Levels) > 0:
			return nil, exit.Usagef("sweep: --resume %s: its rates were planned by --rates auto, and it has levels but no %s: run it again without --resume", s.done.Dir, rundir.ProbeFile)
		case p != nil:
			s.Rates = p.Rates
		} // else the probe did not finish: autoRates runs it again
	case s.from != "":
		_, nominal := s.Cfg.Workload.NominalLengths()
		p, err := probeFrom(s.from, s.Cfg.AnalysisOptions(), nominal)
		if err != nil {
			return nil, err
		}
		s.probe, s.Rates = p, p.Rates
	}
	return levels, nil
}

// errShardAuto refuses --rates auto without --from on shard: each shard's own probe would
// plan other rates, and the shards must run the same levels (exit 2).
func errShardAuto(shard string) error {
	return exit.Usagef("sweep: shard %s: --rates auto (sweep.rates: auto) probes the server, and each shard's probe would plan other rates: probe first (a rate sweep without --shard, or --rates auto's probe), then pass the same --rates R1,R2,… (or --rates auto --from DIR) to every shard", shard)
}

// autoRates runs the --rates auto probe when the rates are not known yet (its progress shown by
// newProgress), and writes probe.json when they were planned in this run.
func (s *Sweep) autoRates(ctx context.Context, t *Target, newProgress NewProgress) error {
	if !s.Cfg.Sweep.RateMode() {
		return nil
	}
	if s.Rates == nil {
		if s.done != nil {
			fmt.Fprintf(s.Log, "kneecap: --resume: %s has no %s (its probe did not finish): probing again\n", s.done.Dir, rundir.ProbeFile)
		}
		p, err := s.runProbe(ctx, t, newProgress)
		if err != nil {
			return err
		}
		s.probe, s.Rates = p, p.Rates
	}
	if s.probe == nil {
		return nil
	}
	return s.writeProbe(s.probe)
}

// planTrace reads a trace replay's trace and sets its rates: time scale × the window's mean
// rate. A trace that does not read, or a scale whose rate is outside [MinRate, MaxRate], is a
// usage error naming it.
func (s *Sweep) planTrace() ([]int, error) {
	t, err := workload.LoadTrace(s.Cfg.Workload.Trace)
	if err != nil {
		return nil, exit.Usagef("%w", err)
	}
	if err := s.resumedTrace(t); err != nil {
		return nil, err
	}
	s.trace = t
	s.Rates = nil
	for _, sc := range s.Cfg.Sweep.TimeScalesOf() {
		r := t.Rate(sc)
		if r < sweep.MinRate || r > sweep.MaxRate {
			return nil, exit.Usagef("sweep: time scale %g of %s offers %.4g requests/s (%g × its mean %.4g/s): outside [%g, %g]",
				sc, t.Info.File, r, sc, t.Info.MeanRPS, sweep.MinRate, float64(sweep.MaxRate))
		}
		s.Rates = append(s.Rates, r)
	}
	return []int{s.Cfg.Sweep.InFlightCap()}, nil
}

// traceWhat describes a trace replay's levels: "time scales [1 2 4] of trace F (300 requests
// over 60 s, 5 requests/s at 1×)".
func (s *Sweep) traceWhat(start int) string {
	i := s.trace.Info
	scales := s.Cfg.Sweep.TimeScalesOf()
	note := ""
	if i.Note != "" {
		note = "; " + i.Note
	}
	return fmt.Sprintf("time scales %v of trace %s (%s, %d requests over %.4g s: %.4g requests/s at 1×%s; at most %d in flight)",
		scales[min(start, len(scales)):], i.File, i.Format, i.Requests, i.DurationS, i.MeanRPS, note, s.Cfg.Sweep.InFlightCap())
}

// resumedTrace makes config.yaml keep the trace's absolute path (a new run: --resume works
// from any directory) or, on --resume, checks that t is the trace the run replayed: the
// path and SHA-256 levels.json recorded (a mismatch is a usage error naming both), keeping
// the file name it was given as.
func (s *Sweep) resumedTrace(t *workload.Trace) error {
	if s.done == nil {
		s.Cfg.Workload.Trace.File = t.Info.Path
		return nil
	}
	was := s.done.Trace
	if was == nil { // interrupted before levels.json named it (runs of an older kneecap)
		return nil
	}
	if was.SHA256 != "" && was.SHA256 != t.Info.SHA256 {
		return exit.Usagef("sweep: --resume %s: the trace %s (sha256 %s) is not the one the run replayed, %s (sha256 %s): restore that file, or start a new run",
			s.done.Dir, t.Info.Path, t.Info.SHA256, cmp.Or(was.Path, was.File), was.SHA256)
	}
	t.Info.File = was.File
	return nil
}

// setTrace records a trace replay's trace in levels.json, now.
func (s *Sweep) setTrace(dir *rundir.Dir) error {
	if s.trace == nil {
		return nil
	}
	if err := dir.SetTrace(&s.trace.Info); err != nil {
		return exit.Usagef("sweep: %w", err)
	}
	return nil
}
