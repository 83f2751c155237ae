package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// traceFlags are the flags of a trace replay (DESIGN §3.9, §9.1).
type traceFlags struct {
	file, scales, window string
}

// traceFlagNames are the flags of traceFlags, which --resume refuses like the other
// configuration flags.
var traceFlagNames = []string{"trace", "time-scale", "trace-window"}

// define defines the trace flags on fs.
func (f *traceFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&f.file, "trace", "", "replay the recorded trace `FILE` open loop: Mooncake JSONL, BurstGPT or Azure LLM inference CSV (workload.trace.file); implies --mode rate")
	fs.StringVar(&f.scales, "time-scale", "", "time scales to replay the trace at, a `list` such as 0.5,1,2,4: 2 = arrivals twice as fast (sweep.time_scales; default 1)")
	fs.StringVar(&f.window, "trace-window", "", "replay only the slice `START-END` of the trace, durations from its first arrival such as 10m-20m (workload.trace.window)")
}

// applyTraceFlags sets the trace flags given over cfg, and makes a configuration that replays
// a trace without a mode a rate sweep; a value that does not parse is returned, for the
// caller to report with the configuration's problems.
func applyTraceFlags(cfg *config.Config, f *traceFlags, set map[string]bool) error {
	var err error
	tr := &cfg.Workload.Trace
	if set["trace"] {
		tr.File = f.file
		cfg.Override("workload.trace.file", "--trace")
	}
	if set["trace-window"] {
		tr.Window = f.window
		cfg.Override("workload.trace.window", "--trace-window")
	}
	if set["time-scale"] {
		if list, perr := parseTimeScales(f.scales); perr != nil {
			err = fmt.Errorf("--time-scale: %w", perr)
		} else {
			cfg.Sweep.TimeScales = list
			cfg.Override("sweep.time_scales", "--time-scale")
		}
	}
	if tr.Enabled() && cfg.Sweep.Mode == "" && !set["mode"] {
		cfg.Sweep.Mode = record.ModeRate
		origin := "workload.trace"
		if set["trace"] {
			origin = "--trace"
		}
		cfg.Override("sweep.mode", origin)
	}
	return err
}

// parseTimeScales parses --time-scale: a list of factors such as "0.5,1,2,4".
func parseTimeScales(v string) ([]float64, error) {
	var list []float64
	for _, f := range strings.Split(v, ",") {
		if f = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(f), "x")); f == "" {
			continue
		}
		x, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return nil, fmt.Errorf("%q is not a time scale (want a list such as 0.5,1,2,4)", f)
		}
		list = append(list, x)
	}
	if len(list) == 0 {
		return nil, errors.New("empty list (want a list such as 0.5,1,2,4)")
	}
	return list, nil
}

// planTrace reads a trace replay's trace and sets its rates: time scale × the window's mean
// rate. A trace that does not read, or a scale whose rate is outside [MinRate, MaxRate], is a
// usage error naming it.
func (s *sweepPrep) planTrace() ([]int, error) {
	t, err := workload.LoadTrace(s.cfg.Workload.Trace)
	if err != nil {
		return nil, usageError("%w", err)
	}
	if err := s.resumedTrace(t); err != nil {
		return nil, err
	}
	s.trace = t
	s.rates = nil
	for _, sc := range s.cfg.Sweep.TimeScalesOf() {
		r := t.Rate(sc)
		if r < sweep.MinRate || r > sweep.MaxRate {
			return nil, usageError("sweep: time scale %g of %s offers %.4g requests/s (%g × its mean %.4g/s): outside [%g, %g]",
				sc, t.Info.File, r, sc, t.Info.MeanRPS, sweep.MinRate, float64(sweep.MaxRate))
		}
		s.rates = append(s.rates, r)
	}
	return []int{s.cfg.Sweep.InFlightCap()}, nil
}

// traceWhat describes a trace replay's levels: "time scales [1 2 4] of trace F (300 requests
// over 60 s, 5 requests/s at 1×)".
func (s *sweepPrep) traceWhat(start int) string {
	i := s.trace.Info
	scales := s.cfg.Sweep.TimeScalesOf()
	note := ""
	if i.Note != "" {
		note = "; " + i.Note
	}
	return fmt.Sprintf("time scales %v of trace %s (%s, %d requests over %.4g s: %.4g requests/s at 1×%s; at most %d in flight)",
		scales[min(start, len(scales)):], i.File, i.Format, i.Requests, i.DurationS, i.MeanRPS, note, s.cfg.Sweep.InFlightCap())
}

// resumedTrace makes config.yaml keep the trace's absolute path (a new run: --resume works
// from any directory) or, on --resume, checks that t is the trace the run replayed: the
// path and SHA-256 levels.json recorded (a mismatch is a usage error naming both), keeping
// the file name it was given as.
func (s *sweepPrep) resumedTrace(t *workload.Trace) error {
	if s.done == nil {
		s.cfg.Workload.Trace.File = t.Info.Path
		return nil
	}
	was := s.done.Trace
	if was == nil { // interrupted before levels.json named it (runs of an older kneecap)
		return nil
	}
	if was.SHA256 != "" && was.SHA256 != t.Info.SHA256 {
		return usageError("sweep: --resume %s: the trace %s (sha256 %s) is not the one the run replayed, %s (sha256 %s): restore that file, or start a new run",
			s.done.Dir, t.Info.Path, t.Info.SHA256, cmp.Or(was.Path, was.File), was.SHA256)
	}
	t.Info.File = was.File
	return nil
}

// setTrace records a trace replay's trace in levels.json, now.
func (s *sweepPrep) setTrace(dir *rundir.Dir) error {
	if s.trace == nil {
		return nil
	}
	if err := dir.SetTrace(&s.trace.Info); err != nil {
		return usageError("sweep: %w", err)
	}
	return nil
}
