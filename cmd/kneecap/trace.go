package main

import (
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
)

// traceFlags are the flags of a trace replay (DESIGN §3.9, §9.1).
type traceFlags struct {
	file, scales, window string
}

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
	return config.ParseList(v, "0.5,1,2,4", func(f string) (float64, error) {
		x, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(f, "x")), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return 0, fmt.Errorf("%q is not a time scale (want a list such as 0.5,1,2,4)", f)
		}
		return x, nil
	})
}
