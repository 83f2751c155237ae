package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
)

// Probe is how --rates auto planned a rate sweep's rates: the content of probe.json
// (rundir.ProbeFile).
type Probe struct {
	// From is the closed-loop results directory of --from; "" when kneecap probed.
	From string `json:"from,omitempty"`
	// MaxQPS is the largest completion rate of a valid level (output TPS ÷ mean output
	// tokens, the capacity's y on the rate axis), requests/s; MaxQPSConcurrency its level.
	MaxQPS            float64 `json:"max_qps"`
	MaxQPSConcurrency int     `json:"max_qps_concurrency"`
	// Rates are the offered rates planned from it (sweep.PlanRates).
	Rates []float64 `json:"rates"`
	// Estimate says how MaxQPS was found when no level was valid ("" when it is a valid
	// level's completion rate): output TPS ÷ mean output tokens of the level that streamed
	// the most (analysis.Level.CompletionRate, or the workload's nominal length when no
	// request completed).
	Estimate string `json:"estimate,omitempty"`
	// PilotE2EMs is the E2E of the pilot request that sized the probe's windows, ms, and
	// WindowS the probe's measured window, s (0 for --from).
	PilotE2EMs float64 `json:"pilot_e2e_ms,omitempty"`
	WindowS    float64 `json:"window_s,omitempty"`
	// StopReason is why the probe stopped; Levels its levels.
	StopReason string           `json:"stop_reason,omitempty"`
	Levels     []analysis.Level `json:"levels"`
	// Pilot is the pilot request's record when it failed and stopped the probe (nil
	// otherwise).
	Pilot *record.Record `json:"pilot,omitempty"`
}

// Progress is the console display of a sweep the launch runs itself (the probe's): its
// Observer, and Close, which erases what is left of it.
type Progress interface {
	sweep.Observer
	Close()
}

// NewProgress returns the Progress of a sweep of levels run with protocol proto.
type NewProgress func(levels []int, proto sweep.Protocol) Progress

// memSink keeps a sweep's levels in memory (the probe's are not part of the run).
type memSink struct{ levels []record.Level }

func (m *memSink) LevelDone(l record.Level) error { m.levels = append(m.levels, l); return nil }
func (m *memSink) Finish(string) error            { return nil }

// runProbe runs the closed-loop probe of --rates auto against the target and returns its
// result: one pilot request, whose E2E sizes the windows (probeProtocol), then the levels
// of probeLevels. An interrupt during it is exit 130 with nothing measured of the rate
// sweep; a server that stopped connecting exit 3; a probe that found no max QPS exit 1.
func (s *Sweep) runProbe(ctx context.Context, t *Target, newProgress NewProgress) (*Probe, error) {
	e2e, pilot, err := s.pilot(ctx, t)
	if pilot != nil {
		if pilot.ErrorClass == record.ErrTimeout && s.budget != nil && s.budget.Unheard() {
			// A server that answered nothing at all: a grid stops here, since each of its
			// scenarios would wait out the budget alike (ServerDown).
			err = exit.With(exit.Failure, &NeverAnsweredError{err})
		}
		return nil, s.probeStopped(&Probe{StopReason: "the pilot request failed: " + string(pilot.ErrorClass), Pilot: pilot}, err)
	}
	if err != nil {
		return nil, err
	}
	levels := probeLevels(s.Cfg.Sweep.InFlightCap())
	plan := sweep.Plan{Levels: levels, Protocol: probeProtocol(s.Cfg.Sweep, e2e), Workload: s.sent(),
		ThinkTime: s.Cfg.Workload.ThinkTime, AnswerBudget: s.levelBudget()}
	plan.Judge = analysis.StopRules{Rules: plan.Protocol.Stop, API: s.Cfg.Target.API}
	fmt.Fprintf(s.Log, "kneecap: --rates auto: probing the max QPS closed-loop at concurrency %v (windows of %s: one request took %s; stops when throughput does)\n",
		levels, config.ShortDuration(plan.Protocol.Duration.Round(time.Millisecond)), config.ShortDuration(e2e.Round(time.Millisecond)))
	prog := newProgress(levels, plan.Protocol)
	plan.Observer = prog
	sink := &memSink{}
	out, err := sweep.Run(ctx, s.Interrupt, plan, t.client, sink)
	prog.Close()
	s.probeElapsed = out.Elapsed
	perr := probeFailed(out, err)
	if err != nil || out.Interrupted {
		return nil, perr // nothing to report: the probe's sweep broke, or the user stopped it
	}
	summary := analysis.Summarize(sink.levels, s.Cfg.AnalysisOptions())
	_, nominal := s.Cfg.Workload.NominalLengths()
	var p *Probe
	if perr == nil {
		if p, err = probeOf(summary, nominal); err != nil {
			// Its levels all failed (a burst of 500s stopped it by error rate): no max QPS.
			perr = exit.With(exit.Failure, fmt.Errorf("sweep: --rates auto: probe (stopped: %s): %w", out.StopReason, err))
		}
	}
	if perr != nil {
		return nil, s.probeStopped(&Probe{StopReason: out.StopReason, Levels: summary}, perr)
	}
	p.StopReason, p.PilotE2EMs, p.WindowS = out.StopReason, float64(e2e)/1e6, plan.Protocol.Duration.Seconds()
	return p, nil
}

// pilot sends one request of the workload alone and returns its E2E, the pace the probe's
// windows are sized to; an interrupt cancels it (exit 130), and a request that fails is exit
// 1 (the preflight has reached the server), its record returned.
func (s *Sweep) pilot(ctx context.Context, t *Target) (time.Duration, *record.Record, error) {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.Interrupt, cancel)()
	req := s.workload.Next(0, 0, 0)
	req.Budget = s.levelBudget() // the first request that measures: its token answers the budget
	var rec record.Record
	t.client.Do(pctx, &req, &rec)
	switch {
	case pctx.Err() != nil:
		return 0, nil, exit.With(exit.Interrupted, errors.New("sweep interrupted during the --rates auto probe: no rate level was run"))
	case !rec.OK():
		return 0, &rec, exit.With(exit.Failure, fmt.Errorf("sweep: --rates auto: probe: the pilot request failed: %s %s", rec.Status, rec.Error))
	}
	if req.Budget != nil {
		req.Budget.Answer() // an embeddings pilot streams no content chunk
	}
	return rec.E2E, nil, nil
}

// ProbeStoppedError is the error of a --rates auto probe that stopped before it planned the
// rates (its pilot request failed, its server stopped connecting or answering, its levels
// found no max QPS), or of a preflight that hung (preflightHung), once its results directory
// records why (probe.json, levels.json's stop reason): the caller analyzes and reports it as
// any failed sweep's. Err keeps the exit code.
type ProbeStoppedError struct{ Err error }

func (e *ProbeStoppedError) Error() string { return e.Err.Error() }

func (e *ProbeStoppedError) Unwrap() error { return e.Err }

// probeStopped records the probe p that stopped with err: probe.json, and "--rates auto
// probe: " and p's stop reason as the sweep's in levels.json; it returns err as a
// ProbeStoppedError (or the error of the writing).
func (s *Sweep) probeStopped(p *Probe, err error) error {
	if p.Pilot != nil && s.Secrets != nil {
		p.Pilot.Error = s.Secrets.Text(p.Pilot.Error)
	}
	if werr := s.writeProbeFile(p); werr != nil {
		return werr
	}
	if werr := s.Dir.Finish("--rates auto probe: " + p.StopReason); werr != nil {
		return fmt.Errorf("sweep: %w", werr)
	}
	return &ProbeStoppedError{Err: err}
}

// probeFailed is the error of a probe sweep that did not finish: an error of the sweep (exit
// 1), an interrupt (130), a server that stopped connecting (3) or answering (1).
func probeFailed(out sweep.Outcome, err error) error {
	switch {
	case err != nil:
		return exit.With(exit.Failure, fmt.Errorf("sweep: --rates auto: probe: %w", err))
	case out.Interrupted:
		return exit.With(exit.Interrupted, errors.New("sweep interrupted during the --rates auto probe: no rate level was run"))
	case out.Unreachable:
		return exit.With(exit.Unreachable, fmt.Errorf("sweep: --rates auto: probe: %s", out.StopReason))
	case out.Silent, out.Overlong:
		return exit.With(exit.Failure, fmt.Errorf("sweep: --rates auto: probe: %s", out.StopReason))
	}
	return nil
}

// writeProbeFile writes p to the results directory's probe.json.
func (s *Sweep) writeProbeFile(p *Probe) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	if err := rundir.WriteFileAtomic(filepath.Join(s.Dir.Path(), rundir.ProbeFile), append(b, '\n')); err != nil {
		return fmt.Errorf("sweep: %w", err)
	}
	return nil
}

// probeFrom reads the max QPS of --from DIR, a closed-loop results directory: its records
// summarized with this sweep's options or, without them (a published run such as
// examples/sample-run), the levels of its analysis.json.
func probeFrom(dir string, opts analysis.Options, nominalOut float64) (*Probe, error) {
	var levels []analysis.Level
	var stop string
	if res, err := rundir.Read(dir); err == nil {
		levels, stop = analysis.Summarize(res.Levels, opts), res.StopReason
	} else if a, aerr := readAnalysis(dir); aerr == nil {
		levels, stop = a.Levels, a.Meta.StopReason
	} else if errors.Is(aerr, fs.ErrNotExist) {
		return nil, exit.Usagef("sweep: --from: %w (and it has no %s)", err, rundir.AnalysisFile)
	} else {
		return nil, exit.Usagef("sweep: --from %s: no records, and %s: %v", dir, rundir.AnalysisFile, aerr)
	}
	p, err := probeOf(levels, nominalOut)
	if err != nil {
		return nil, exit.Usagef("sweep: --from %s: %w", dir, err)
	}
	p.From, p.StopReason = dir, stop
	return p, nil
}

// readAnalysis reads dir's analysis.json (schema analysis.Schema).
func readAnalysis(dir string) (*analysis.Result, error) {
	b, err := os.ReadFile(filepath.Join(dir, rundir.AnalysisFile))
	if err != nil {
		return nil, err
	}
	var a analysis.Result
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, err
	}
	if a.Schema != analysis.Schema {
		return nil, fmt.Errorf("schema %q, want %q", a.Schema, analysis.Schema)
	}
	return &a, nil
}

// ReadProbe reads probe.json of a resumed run of --rates auto, whose rates it planned: nil
// when there is none (the probe was interrupted, or its sweep failed with an error), and the
// resumed run probes again. A probe that stopped and was reported (probeStopped) wrote a file
// without rates, but its run is finished: rundir.Resume refuses it before this reads it.
func ReadProbe(dir string) (*Probe, error) {
	b, err := os.ReadFile(filepath.Join(dir, rundir.ProbeFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, exit.Usagef("sweep: --resume %s: its rates were planned by --rates auto, and %s cannot be read: %v", dir, rundir.ProbeFile, err)
	}
	var p Probe
	if err := json.Unmarshal(b, &p); err != nil || len(p.Rates) == 0 {
		return nil, exit.Usagef("sweep: --resume %s: %s holds no planned rates", dir, rundir.ProbeFile)
	}
	return &p, nil
}

// writeProbe writes probe.json into the results directory and says the max QPS and the rates.
func (s *Sweep) writeProbe(p *Probe) error {
	if err := s.writeProbeFile(p); err != nil {
		return err
	}
	from := "the probe"
	if p.From != "" {
		from = p.From
	}
	fmt.Fprintf(s.Log, "kneecap: --rates auto: max QPS %.3g requests/s (%s, concurrency %d): offering %v requests/s (%s)\n",
		p.MaxQPS, from, p.MaxQPSConcurrency, p.Rates, rundir.ProbeFile)
	if p.Estimate != "" {
		fmt.Fprintf(s.Log, "kneecap: --rates auto: the max QPS is an estimate: %s\n", p.Estimate)
	}
	return nil
}
