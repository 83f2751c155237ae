package sweep

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/workload"
)

// StopBudget is the stop reason when the sweep's time budget (sweep.stop.budget) ran out.
const StopBudget = "time budget"

// StopScheduleMissed starts the stop reason of a shard that could not start a level on
// schedule (more than half its warmup late).
const StopScheduleMissed = "missed the schedule"

// Outcome is how a sweep ended.
type Outcome struct {
	// Levels are the levels run by this call, in order, including a partial last level
	// (interrupted or cut by the budget). Levels of Plan.Done are not repeated.
	Levels []record.LevelRun
	// StopReason is why the sweep stopped: StopDone, StopInterrupted, StopBudget or the
	// Judge's reason. It is the reason given to Sink.Finish.
	StopReason string
	// Interrupted reports a stop by the interrupt context or by cancellation of ctx.
	Interrupted bool
	// Cancelled reports that ctx was cancelled (hard stop): in-flight requests were
	// cancelled rather than drained.
	Cancelled bool
	// Elapsed is the wall time of the sweep.
	Elapsed time.Duration
	// Unreachable reports a stop because no request of a level could connect for
	// Plan.UnreachableAfter (StopUnreachable); Silent one because every worker's first
	// request of a level timed out unanswered (StopSilent). The level that found it is the
	// last of Levels. Overlong reports a stop because every worker's first request of a level
	// streamed past its max_tokens (StopOverlong).
	Unreachable, Silent, Overlong bool
	// NeverAnswered reports a Silent stop at the first level while its answer budget had
	// heard no answer at all (record.AnswerBudget.Unheard): neither the preflight's probe,
	// nor the prompt sizing, nor any request of the level was answered.
	NeverAnswered bool
}

// Validate reports every problem of the plan at once (nil when it can run).
//
// Zero values mean: Warmup 0 no minimum warmup (W0 comes when every worker has completed a
// request); WarmupMax 0 no cap; MaxDuration 0 (or ≤ Duration) no extension past Duration;
// DrainTimeout 0 cancel in-flight requests at W1; Cooldown, Budget, ThinkTime and MinRequests 0
// none. Duration must be at least MinSlices nanoseconds and CITarget positive.
func (p Plan) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch {
	case len(p.Levels) == 0 && len(p.Rates) == 0:
		bad("no levels")
	case len(p.Levels) > 0 && len(p.Rates) > 0:
		bad("both concurrency levels and rates: give one")
	}
	for i, c := range p.Levels {
		if c <= 0 {
			bad("level %d: concurrency %d must be > 0", i, c)
		}
	}
	errs = append(errs, p.validateRates()...)
	if n := len(p.plannedX()); p.StartIndex < 0 || p.StartIndex > n {
		bad("start index %d outside [0, %d]", p.StartIndex, n)
	}
	if p.Workload == nil {
		bad("no workload")
	}
	if _, ok := p.Workload.(workload.Conversations); ok && len(p.Rates) > 0 {
		bad("workload.sessions: a conversation is a closed loop; an arrival-rate sweep sends single requests")
	}
	pr := p.Protocol
	if pr.Duration < record.MinSlices {
		bad("duration %s must be at least %d ns (one per slice)", pr.Duration, record.MinSlices)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"warmup", pr.Warmup}, {"warmup_max", pr.WarmupMax}, {"max_duration", pr.MaxDuration},
		{"drain_timeout", pr.DrainTimeout}, {"cooldown", pr.Cooldown}, {"stop.budget", pr.Stop.Budget},
		{"think_time", p.ThinkTime},
	} {
		if d.v < 0 {
			bad("%s %s must be ≥ 0", d.name, d.v)
		}
	}
	if pr.WarmupMax > 0 && pr.WarmupMax < pr.Warmup {
		bad("warmup_max %s is shorter than warmup %s", pr.WarmupMax, pr.Warmup)
	}
	if pr.MinRequests < 0 {
		bad("min_requests %d must be ≥ 0", pr.MinRequests)
	}
	if !(pr.CITarget > 0) || math.IsInf(pr.CITarget, 1) {
		bad("ci_target %v must be > 0", pr.CITarget)
	}
	if p.Refine < 0 {
		bad("refine %d must be ≥ 0", p.Refine)
	}
	if p.Refine > 0 && p.Refiner != nil && p.Schedule != nil {
		bad("refine: a shard on a schedule cannot add levels")
	}
	if s := p.Schedule; s != nil {
		if s.Shards < 1 || s.Shard < 0 || s.Shard >= s.Shards {
			bad("schedule: shard %d of %d", s.Shard, s.Shards)
		}
		if s.Start.IsZero() {
			bad("schedule: no start time")
		}
		if pr.Warmup <= 0 {
			bad("schedule: warmup %s must be > 0", pr.Warmup)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("sweep: invalid plan: %w", errors.Join(errs...))
}

// Run executes plan against client, level by level, handing each finished level to sink
// (DESIGN §3). The plan's executor (executor.go) issues each level's requests: the closed loop
// described here, or, with Rates, the open loop or the trace replay of DESIGN §3.9, over the
// same lifecycle.
//
// A level with concurrency c runs exactly c workers, each sending plan.Workload's next
// request, reading its stream to the end, recording it and (after ThinkTime) sending the
// next. Worker w sends its first request at w·Warmup/c, so the closed loops are not
// phase-locked (c loops started together would complete in bursts of c). Warmup lasts
// until Warmup has elapsed and every worker has completed a request (capped by WarmupMax);
// that moment is W0. The window then runs for at least Duration and
// MinRequests successful completions, split into slices of Duration ÷ MinSlices, and ends at
// the first slice boundary W1 where SteadyState passes, extending slice by slice up to
// MaxDuration (then the level is not steady).
//
// The steady test only looks at complete data: the controller collects finished records a
// few times a second and tracks the horizon, the earliest send time of a request still in
// flight; a candidate window is tested only once W1 ≤ horizon, when every token that arrived
// before W1 (including those of requests sent during warmup) is in a finished record. Workers
// keep issuing until that decision, so the window is at full occupancy to its end; requests
// sent after W1 are phase drain. The window therefore ends up to one request duration before
// issuing stops. At MaxDuration, an interrupt or the budget, W1 is that moment and issuing
// stops at once; the final slice TPS and verdict are always recomputed from every record of
// the level after the drain.
//
// After issuing stops, in-flight requests finish until DrainTimeout and are then cancelled
// (LevelRun.Cancelled). After each level: sink.LevelDone, Observer.LevelFinished, then
// plan.Judge.Decide over plan.Done and every level so far. With plan.Schedule (one shard of a
// sharded sweep) each level instead reads the shard's clock (Schedule.Clock: shardclock.go),
// waits for its scheduled start, runs the shard's workers (a rate level: its arrivals of the
// one schedule, in its slots) for the scheduled warmup and the longest window, and drains
// until its scheduled end; the Judge is not consulted, and a level more than half a warmup
// late stops the sweep (StopScheduleMissed). Stop.Budget (0 = none) bounds the
// sweep: a level that cannot fit its warmup and duration is not started, and the running
// level is cut at the budget (StopBudget).
//
// After the planned levels (all run, or stopped by the Judge), each level excluded for its
// steadiness or the client's lateness runs again with twice its window, up to
// Protocol.RetryExcluded times (retry.go; LevelRun.RetryOf), while the budget leaves room,
// and an added level so excluded right after it. Then plan.Refiner adds up to
// plan.Refine levels one at a time, each chosen from every level so far (LevelRun.Refine says
// why). The Judge is not consulted on them (its rules read the planned ramp); the Refiner
// stops adding with a reason when an added level fails, and an added level starts only when
// the budget leaves room for its warmup and duration. An interrupt, the budget or an error
// during the planned levels ends the sweep without added levels. The stop reason stays the
// Judge's (or StopDone), followed by "; no more levels added: …" when adding stopped early
// (the Refiner's reason, or the budget).
//
// A level whose server stopped answering ends at once and stops the sweep (dead.go): no
// worker's request connected for UnreachableAfter (StopUnreachable, Outcome.Unreachable;
// connect errors back off per worker meanwhile), or every worker's first request timed out
// and none succeeded (StopSilent, Outcome.Silent).
//
// interrupt done = stop issuing, drain (bounded by DrainTimeout and InterruptDrainTimeout,
// also when the interrupt comes during a drain), hand the partial level to
// sink with Interrupted set and W1 the interrupt time, Finish(StopInterrupted). ctx
// cancelled = hard stop: in-flight requests are cancelled, what was measured still goes to
// sink. Neither is an error: Outcome says what happened. Run returns an error for an invalid
// plan and for sink failures; sink.Finish is called exactly once whenever the plan is valid.
// A nil interrupt never fires.
func Run(ctx, interrupt context.Context, plan Plan, client record.Client, sink Sink) (Outcome, error) {
	err := plan.Validate()
	if client == nil {
		err = errors.Join(err, errors.New("sweep: no client"))
	}
	if sink == nil {
		err = errors.Join(err, errors.New("sweep: no sink"))
	}
	if err != nil {
		return Outcome{}, err
	}
	if interrupt == nil {
		interrupt = context.Background()
	}
	r := &controller{ctx: ctx, interrupt: interrupt, plan: &plan, ex: plan.executor(), client: client, sink: sink, start: time.Now()}
	r.sig = levelSignals{ctx: ctx.Done(), interrupt: interrupt.Done()}
	// On a schedule the budget counts from the agreed start, so every shard stops alike.
	r.budgetFrom = r.start
	if plan.Schedule != nil {
		r.budgetFrom = plan.Schedule.Start
	}
	if b := plan.Protocol.Stop.Budget; b > 0 && plan.Schedule == nil {
		// A shard never cuts a level at the budget (the shards' cuts would differ): it only
		// starts the levels whose scheduled load ends within it (controller.level).
		bctx, cancel := context.WithDeadline(context.Background(), r.budgetFrom.Add(b))
		defer cancel()
		r.sig.budget = bctx.Done()
	}
	r.levels = append([]record.Level(nil), plan.Done...)
	for _, l := range plan.Done {
		if l.Run.Refine != "" {
			r.added++
		}
	}

	judged := r.planned()
	notRetried, notAdded := "", ""
	if r.out.StopReason == "" {
		notRetried = r.retryExcluded()
	}
	if r.refining() && r.out.StopReason == "" {
		notAdded = r.addLevels()
	}
	out := &r.out
	if out.StopReason == "" {
		out.StopReason = judged
	}
	if out.StopReason == "" {
		out.StopReason = StopDone
	}
	if notRetried != "" && out.StopReason != StopInterrupted && !strings.HasPrefix(out.StopReason, "error: ") {
		out.StopReason += "; not retried: " + notRetried
	}
	if notAdded != "" && out.StopReason != StopInterrupted && !strings.HasPrefix(out.StopReason, "error: ") {
		out.StopReason += "; no more levels added: " + notAdded
	}
	out.Cancelled = ctx.Err() != nil
	out.Interrupted = out.StopReason == StopInterrupted
	out.Elapsed = time.Since(r.start)
	if err := sink.Finish(out.StopReason); err != nil {
		r.sinkErr = errors.Join(r.sinkErr, fmt.Errorf("sweep: finish: %w", err))
	}
	return *out, r.sinkErr
}

// controller is one Run: the levels so far and how the sweep is ending.
type controller struct {
	ctx, interrupt context.Context
	plan           *Plan
	ex             executor // issues the requests of every level
	client         record.Client
	sink           Sink
	sig            levelSignals
	start          time.Time
	budgetFrom     time.Time
	// levels are every level so far (plan.Done first); added counts the added ones.
	levels  []record.Level
	added   int
	noRetry bool // the budget refused a retry: no more are tried
	out     Outcome
	sinkErr error

	// clockOffset is the offset of this shard's clock the last level ran on (shardPlan).
	clockOffset time.Duration
}

// refining reports whether the sweep adds levels after its planned ones.
func (r *controller) refining() bool {
	p := r.plan
	return p.Refiner != nil && p.Refine > 0 && p.Schedule == nil
}

// refine asks the plan's refiner for the next added level: its x, 0 to stop adding, and why.
func (r *controller) refine() (x float64, why string) {
	if x, why = r.plan.Refiner.Refine(r.levels); !positive(x) {
		return 0, why
	}
	return x, why
}

// planned runs the planned levels until the Judge stops them (or an interrupt, the budget or
// a sink error does, in out.StopReason) and returns the Judge's reason. A resumed sweep that
// adds levels asks the Judge first, over the planned levels done: it may have stopped them
// before an added level ran (or was interrupted, and dropped to be run again), and its reason
// is the sweep's.
func (r *controller) planned() (judged string) {
	p := r.plan
	if p.Judge != nil && (r.refining() || p.Protocol.RetryExcluded > 0 && p.Schedule == nil) && len(r.levels) > 0 {
		if done := plannedLevels(r.levels); len(done) > 0 {
			judged = p.Judge.Decide(done)
		}
	}
	xs := p.plannedX()
	for i := p.StartIndex; r.added == 0 && !r.retried() && judged == "" && i < len(xs); i++ {
		if r.out.StopReason = r.level(levelAsk{index: i, x: xs[i]}, i == p.StartIndex); r.out.StopReason != "" {
			break
		}
		if p.Judge != nil && p.Schedule == nil {
			judged = p.Judge.Decide(r.levels)
		}
	}
	return judged
}

// addLevels runs the added levels while the Refiner asks for one and the budget leaves room
// for it, and returns why adding stopped early ("" when it did not). The Judge's rules on the
// sweep's shape (plateau, overload) do not apply to them; the Refiner stops adding when an
// added level fails (errors, stop_ttft) and says why.
func (r *controller) addLevels() (notAdded string) {
	p := r.plan
	budget := p.Protocol.Stop.Budget
	for first := len(r.out.Levels) == 0; r.out.StopReason == "" && r.added < p.Refine; r.added++ {
		need := p.Protocol.Warmup + p.Protocol.Duration
		if !first {
			need += p.Protocol.Cooldown
		}
		if budget > 0 && time.Now().Add(need).Sub(r.budgetFrom) > budget {
			return "stop.budget leaves no time for an added level"
		}
		x, why := r.refine()
		if x <= 0 {
			return why
		}
		r.out.StopReason = r.level(levelAsk{index: len(r.levels), x: x, why: why}, first)
		first = false
		if r.out.StopReason == StopBudget {
			// The budget cut the added level short: the sweep itself was complete.
			r.out.StopReason = ""
			return fmt.Sprintf("stop.budget cut the added level at %s short", r.ex.name(x))
		}
		if r.out.StopReason == "" {
			// An added level excluded for steadiness or lateness is run again too; a retry
			// the budget refuses does not stop the adding (the added levels are shorter).
			r.retryExcluded()
		}
	}
	return ""
}

// levelStart readies level index of p and waits for its start: on a Schedule, at its
// scheduled time on this machine's clock (scheduledStart, which also returns the plan moved
// there and the clock reading); else after the cooldown (none before the first level). It
// returns when the level starts, or a reason to stop instead: the budget, which refuses a
// level whose load would end past it, or an interrupt.
func (r *controller) levelStart(p *Plan, index int, first bool) (*Plan, *record.ClockOffset, time.Time, string) {
	if p.Schedule != nil {
		return r.scheduledStart(p, index)
	}
	cool := time.Duration(0)
	if !first {
		cool = p.Protocol.Cooldown
	}
	levelAt := time.Now().Add(cool)
	loadEnd := levelAt.Add(p.Protocol.Warmup + p.Protocol.Duration)
	if b := p.Protocol.Stop.Budget; b > 0 && loadEnd.Sub(r.budgetFrom) > b {
		return p, nil, levelAt, StopBudget
	}
	return p, nil, levelAt, wait(r.ctx, r.interrupt, cool)
}

// levelAsk is one level to run: its index and x (a concurrency or an offered rate); why an
// added level was added; for a retry, the index of the level it reruns, why, and the factor
// of its window.
type levelAsk struct {
	index    int
	x        float64
	why      string
	retryOf  *int
	retryWhy string
	scale    int
}

// level runs one level (after the cooldown, or at its scheduled time) at ask.x and returns a
// reason to stop the sweep, or "".
func (r *controller) level(ask levelAsk, first bool) string {
	p := r.plan
	if ask.scale > 1 {
		q := *p
		q.Protocol.Duration *= time.Duration(ask.scale)
		q.Protocol.MaxDuration *= time.Duration(ask.scale)
		p = &q
	}
	index, name := ask.index, r.ex.name(ask.x)
	p, clock, levelAt, reason := r.levelStart(p, index, first)
	if reason != "" {
		return reason
	}
	sched := p.Schedule
	if late := time.Since(levelAt); sched != nil && late > p.Protocol.Warmup/2 {
		// The other shards started this level long ago (this process was late to start,
		// or stopped): joining now would load the server with a part of the level's
		// workers during the others' window.
		return fmt.Sprintf("%s: level %d (%s) was due at %s, %s ago", StopScheduleMissed,
			index+1, name, levelAt.UTC().Format(time.RFC3339Nano), late.Round(time.Millisecond))
	}
	budget := p.AnswerBudget
	if len(r.out.Levels) > 0 {
		budget = nil // the first level run has had it
	}
	run, records, end, down := runLevel(r.ctx, r.sig, p, r.client, r.ex, index, ask.x, budget)
	if sched != nil {
		run.Clock = clock
		skewed(&run, records, sched.Skew)
	}
	run.Refine = ask.why
	if ask.retryOf != nil {
		run.RetryOf, run.Retry, run.WindowScale = ask.retryOf, ask.retryWhy, ask.scale
		run.Notes = append([]string{fmt.Sprintf("run again with %d× the window (duration %s, max_duration %s): level %d was excluded, %s",
			ask.scale, p.Protocol.Duration, p.Protocol.MaxDuration, *ask.retryOf, ask.retryWhy)}, run.Notes...)
	}
	r.out.Levels = append(r.out.Levels, run)
	r.levels = append(r.levels, record.Level{Run: run, Records: records})
	if err := r.sink.LevelDone(r.levels[len(r.levels)-1]); err != nil {
		r.sinkErr = fmt.Errorf("sweep: level %d (%s): %w", index, name, err)
		return "error: " + err.Error()
	}
	if p.Observer != nil {
		p.Observer.LevelFinished(r.levels[len(r.levels)-1])
	}
	switch end {
	case endInterrupt, endCancel:
		return StopInterrupted
	case endBudget:
		return StopBudget
	case endUnreachable:
		r.out.Unreachable = true
		return fmt.Sprintf("%s: at %s %s", StopUnreachable, name, down)
	case endSilent:
		r.out.Silent = true
		r.out.NeverAnswered = budget != nil && budget.Unheard()
		return fmt.Sprintf("%s: at %s %s", StopSilent, name, down)
	case endOverlong:
		r.out.Overlong = true
		return fmt.Sprintf("%s: at %s %s", StopOverlong, name, down)
	}
	return ""
}

// plannedLevels returns the planned levels of levels: those neither added by the Refiner nor
// run again as a retry (what the Judge saw when it decided).
func plannedLevels(levels []record.Level) []record.Level {
	var out []record.Level
	for _, l := range levels {
		if l.Run.Refine == "" && l.Run.RetryOf == nil {
			out = append(out, l)
		}
	}
	return out
}

// wait pauses for d (the cooldown) and reports StopInterrupted when ctx or interrupt is done
// first (or already), else "".
func wait(ctx, interrupt context.Context, d time.Duration) string {
	if ctx.Err() != nil || interrupt.Err() != nil {
		return StopInterrupted
	}
	if d <= 0 {
		return ""
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return ""
	case <-ctx.Done():
		return StopInterrupted
	case <-interrupt.Done():
		return StopInterrupted
	}
}

// validateRates reports the problems of a rate sweep's settings: rates within [MinRate,
// MaxRate], the arrival process, the cap ≥ 0 with at most MaxProcessWorkers slots in this
// process, and on a Schedule at least one slot on every shard (the cap ≥ the shards) and a
// trace's every pass within the scheduled window (TraceProblem).
func (p *Plan) validateRates() []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, v := range p.Rates {
		if why := rateProblem(v); why != "" {
			bad("level %d: rate %v %s", i, v, why)
		}
	}
	slots, shards := p.MaxConcurrency, 1
	if s := p.Schedule; s != nil && s.Shards > 0 && s.Shard >= 0 && s.Shard < s.Shards {
		_, slots = Workers(inFlightCap(p.MaxConcurrency), s.Shard, s.Shards)
		shards = s.Shards
	}
	switch {
	case p.MaxConcurrency < 0 || shards == 1 && slots > selfcheck.MaxProcessWorkers:
		bad("max_concurrency %d outside [0, %d]", p.MaxConcurrency, selfcheck.MaxProcessWorkers)
	case slots > selfcheck.MaxProcessWorkers:
		bad("max_concurrency %d: this shard's %d slots are more than the %d one process runs", p.MaxConcurrency, slots, selfcheck.MaxProcessWorkers)
	case len(p.Rates) > 0 && inFlightCap(p.MaxConcurrency) < shards:
		bad("max_concurrency %d is less than the %d shards: every shard needs a slot", p.MaxConcurrency, shards)
	}
	if len(p.Rates) == 0 {
		if p.Trace != nil {
			errs = append(errs, errors.New("trace: a trace replay is a rate sweep: it needs Rates (its time scales × the trace's mean rate)"))
		}
		return errs // Arrival is not used on a concurrency sweep
	}
	if err := p.Arrival.Validate(); err != nil {
		errs = append(errs, err)
	}
	if p.Trace != nil && p.Schedule != nil && p.Protocol.Duration >= record.MinSlices {
		if err := TraceProblem(p.Trace, p.Protocol, p.Rates); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}
