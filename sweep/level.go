package sweep

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client self-diagnosis thresholds: above any of them a level's ClientStats.Bound is set and
// its numbers may describe the load generator rather than the server.
const (
	// ClientCPUBound is the process CPU utilisation (of GOMAXPROCS cores) above which the
	// client is bound.
	ClientCPUBound = 0.9
	// ClientSchedBound is the p99 Go scheduling latency above which the client is bound.
	ClientSchedBound = 5 * time.Millisecond
	// ClientConnWaitBound is the p99 connection-pool wait above which the client is bound.
	ClientConnWaitBound = time.Millisecond
	// ClientRunQueueBound is the share of the window the process's threads spent runnable but
	// waiting for a CPU (per GOMAXPROCS), above which the client is bound: another process
	// was starving it, so its timestamps are late.
	ClientRunQueueBound = 0.2
)

// liveEvery is the period of Observer.Live calls.
const liveEvery = 500 * time.Millisecond

// schedMetric is the runtime/metrics histogram of goroutine scheduling latencies.
const schedMetric = "/sched/latencies:seconds"

// levelEnd says how a level ended.
type levelEnd int

const (
	endNormal    levelEnd = iota // measured to a steady verdict or max_duration
	endInterrupt                 // interrupt: stop issuing and drain
	endCancel                    // ctx cancelled: in-flight requests cancelled
	endBudget                    // the sweep's time budget ran out
)

// clock returns Unix nanoseconds derived from the monotonic clock from base on, so that
// intervals between readings are immune to wall-clock steps.
type clock struct{ base time.Time }

func (c clock) now() int64 { return c.base.UnixNano() + int64(time.Since(c.base)) }

// mailbox is a worker's local record buffer. The worker appends under mu (uncontended except
// when the controller collects, a few times a second); since is the issue time of the
// worker's in-flight request, 0 when idle.
type mailbox struct {
	mu    sync.Mutex
	recs  []Record
	since int64
}

// level is one level being run: c closed-loop workers (or, for a shard, workers first …
// first+n-1 of them) and the controller's view of them.
type level struct {
	index, c int
	first, n int           // the workers this process runs
	stagger  time.Duration // first requests are spread over [0, stagger)
	// staggerFrom is the scheduled start of a shard's level: the spread counts from it, so a
	// shard that starts a little late still has every worker in the same place as the others.
	staggerFrom time.Time
	proto       Protocol
	think       time.Duration
	workload    Workload
	client      Client
	obs         Observer
	clk         clock

	boxes     []*mailbox
	inflight  atomic.Int64
	firstDone atomic.Int64
	warm      chan struct{} // closed when every worker of this process has completed a request
	stop      chan struct{} // closed: stop issuing
	reqCtx    context.Context
	cancelReq context.CancelFunc
	wg        sync.WaitGroup

	// Controller-only state.
	start   int64 // level start (Unix ns)
	all     []Record
	win     *window
	horizon int64 // every record with a chunk before horizon has been collected
}

// window accumulates the measurement window incrementally as records are collected, in
// slices of fixed length from W0 (the steady-state test's slices).
type window struct {
	w0, slice  int64
	kmin, kmax int
	b          bins // [w0, w0+kmax·slice) in kmax slices
	tok        []float64
	okDone     []int
	completed  int       // successful completions at or after w0
	ttft       []float64 // TTFT (ns) of successful completions at or after w0
	nextK      int       // next candidate window length in slices
}

func newWindow(w0, slice int64, kmin, kmax int) *window {
	return &window{
		w0: w0, slice: slice, kmin: kmin, kmax: kmax,
		b:      bins{w0: w0, w1: w0 + slice*int64(kmax), n: int64(kmax)},
		tok:    make([]float64, kmax),
		okDone: make([]int, kmax),
		nextK:  kmin,
	}
}

func (w *window) add(r *Record) {
	TokensInWindow(r, w.b.w0, w.b.w1, w.tok)
	if !r.OK() {
		return
	}
	d := r.Done()
	if d < w.w0 {
		return
	}
	w.completed++
	w.ttft = append(w.ttft, float64(r.TTFT))
	if d < w.b.w1 {
		w.okDone[w.b.index(d)]++
	}
}

// sliceTPS returns the tokens/s of the first k slices.
func (w *window) sliceTPS(k int) []float64 {
	sec := float64(w.slice) / 1e9 // as SliceTPS computes it
	out := make([]float64, k)
	for i := range out {
		out[i] = w.tok[i] / sec
	}
	return out
}

// decide evaluates every candidate window [w0, w0+k·slice) that lies entirely below horizon
// (so every token in it is known) and has not been evaluated yet, shortest first. It returns
// the first k that has min_requests successful completions and passes the steady-state test,
// or 0.
func (w *window) decide(horizon int64, minRequests int, ciTarget float64) int {
	for ; w.nextK <= w.kmax && w.w0+int64(w.nextK)*w.slice <= horizon; w.nextK++ {
		k := w.nextK
		done := 0
		for _, n := range w.okDone[:k] {
			done += n
		}
		if done < minRequests {
			continue
		}
		if _, _, ok := SteadyState(w.sliceTPS(k), ciTarget); ok {
			w.nextK++
			return k
		}
	}
	return 0
}

// liveTPS returns tokens/s over the full slices below horizon: exact, if a little behind.
func (w *window) liveTPS(horizon int64) float64 {
	k := int(min(int64(w.kmax), (horizon-w.w0)/w.slice))
	if k <= 0 {
		return 0
	}
	var sum float64
	for _, v := range w.tok[:k] {
		sum += v
	}
	return sum / (time.Duration(w.slice) * time.Duration(k)).Seconds()
}

// pause waits d (nothing when d ≤ 0) and reports false when the level stopped issuing or was
// cancelled meanwhile.
func (l *level) pause(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-l.stop:
		return false
	case <-l.reqCtx.Done():
		return false
	}
}

// work is worker w's closed loop: send, read to the end, record, think, repeat until stop.
func (l *level) work(w int) {
	defer l.wg.Done()
	box := l.boxes[w-l.first]
	// Stagger the first requests evenly over the warmup: c loops started together stay
	// phase-locked under a steady server (every completion arrives in bursts of c), which
	// biases counts over a window that is not a multiple of the cycle.
	d := time.Duration(int64(l.stagger) * int64(w) / int64(l.c))
	if !l.staggerFrom.IsZero() {
		d = time.Until(l.staggerFrom.Add(d))
	}
	if !l.pause(d) {
		return
	}
	for seq := 0; ; seq++ {
		select {
		case <-l.stop:
			return
		case <-l.reqCtx.Done():
			return
		default:
		}
		req := l.workload.Next(l.index, w, seq)
		issue := l.clk.now()
		rec := Record{Level: l.index, Concurrency: l.c, Worker: w, Seq: seq, Sent: issue}
		box.mu.Lock()
		box.since = issue
		box.mu.Unlock()
		l.inflight.Add(1)
		l.client.Do(l.reqCtx, &req, &rec)
		l.inflight.Add(-1)
		box.mu.Lock()
		box.recs = append(box.recs, rec)
		box.since = 0
		box.mu.Unlock()
		if seq == 0 && l.firstDone.Add(1) == int64(l.n) {
			close(l.warm)
		}
		if !l.pause(l.think) {
			return
		}
	}
}

// collect moves the workers' records to the controller and updates the horizon: the
// earliest issue time of a request in flight, or the collection start when none is. No
// request in flight can have a chunk before it, so the tokens before it are all known.
func (l *level) collect() {
	h := l.clk.now()
	for _, box := range l.boxes {
		box.mu.Lock()
		recs := box.recs
		box.recs = nil
		if box.since != 0 && box.since < h {
			h = box.since
		}
		box.mu.Unlock()
		for i := range recs {
			if l.win != nil {
				l.win.add(&recs[i])
			}
		}
		l.all = append(l.all, recs...)
	}
	l.horizon = h
}

// live sends the level's live numbers to the observer.
func (l *level) live(phase Phase) {
	if l.obs == nil {
		return
	}
	s := LiveStats{
		Index:       l.index,
		Concurrency: l.c,
		Phase:       phase,
		Elapsed:     time.Duration(l.clk.now() - l.start),
		InFlight:    int(l.inflight.Load()),
	}
	if l.win != nil {
		s.Completed = l.win.completed
		s.OutputTPS = l.win.liveTPS(l.horizon)
		s.TTFTP50 = durationQuantile(l.win.ttft, 0.5)
	}
	l.obs.Live(s)
}

// levelSignals are the events that end a level early.
type levelSignals struct {
	ctx, interrupt, budget <-chan struct{}
}

// runLevel runs level index with concurrency c and returns its LevelRun, every record of the
// level (phases assigned) and how it ended.
func runLevel(ctx context.Context, sig levelSignals, p *Plan, client Client, index, c int) (LevelRun, []Record, levelEnd) {
	// Anchored per level: phase boundaries stay within microseconds of the client's wall-clock
	// send times even if the wall clock is slewed during a long sweep.
	clk := clock{base: time.Now()}
	proto := p.Protocol
	// A shard runs its part of the workers on the schedule's fixed times: the window is
	// [w0At, w1At) on every shard, and the drain ends at drainBy.
	sched := p.Schedule
	first, n := 0, c
	var w0At, w1At, drainBy time.Time
	if sched != nil {
		first, n = Workers(c, sched.Shard, sched.Shards)
		w0At = sched.LevelStart(proto, index).Add(proto.Warmup)
		w1At = w0At.Add(scheduledWindow(proto))
		drainBy = w1At.Add(proto.DrainTimeout)
	}
	l := &level{
		index: index, c: c, first: first, n: n, proto: proto, think: p.ThinkTime, workload: p.Workload,
		client: client, obs: p.Observer, clk: clk,
		boxes:   make([]*mailbox, n),
		warm:    make(chan struct{}),
		stop:    make(chan struct{}),
		stagger: proto.Warmup,
	}
	var notes []string
	if sched != nil {
		// A shard's warmup cannot be extended, so the first requests are spread over its
		// first half only: every worker completes one by W0 when E2E ≤ warmup ÷ 2.
		l.stagger = proto.Warmup / 2
		l.staggerFrom = sched.LevelStart(proto, index)
	}
	if n == 0 {
		close(l.warm) // a shard with no worker at this level (c < shards) only keeps time
		notes = append(notes, fmt.Sprintf("this shard runs none of the level's %d workers (%d shards)", c, sched.Shards))
	}
	l.reqCtx, l.cancelReq = context.WithCancel(ctx)
	defer l.cancelReq()
	for i := range l.boxes {
		l.boxes[i] = &mailbox{}
	}
	slice := int64(proto.Duration) / MinSlices
	kmax := maxSlices(proto)
	tickEvery := min(time.Duration(slice)/4, 100*time.Millisecond)
	tickEvery = max(tickEvery, 5*time.Millisecond)
	tick := time.NewTicker(tickEvery)
	defer tick.Stop()

	run := LevelRun{Index: index, Concurrency: c}
	if sched != nil {
		run.Shard = &ShardPart{Index: sched.Shard, Count: sched.Shards, FirstWorker: first, Workers: n}
	}
	l.start = clk.now()
	run.WarmupStart = l.start
	if l.obs != nil {
		l.obs.LevelStarted(index, c)
	}
	l.wg.Add(n)
	for w := first; w < first+n; w++ {
		go l.work(w)
	}
	done := make(chan struct{})
	go func() { l.wg.Wait(); close(done) }()

	lastLive := time.Now()
	maybeLive := func(phase Phase) {
		if time.Since(lastLive) >= liveEvery {
			lastLive = time.Now()
			l.live(phase)
		}
	}
	end := endNormal

	// Warmup: until warmup has elapsed and every worker has completed a request, capped by
	// warmup_max; on a schedule, until the scheduled W0.
	warmFor := proto.Warmup
	if sched != nil {
		warmFor = time.Until(w0At)
	}
	warmT := time.NewTimer(warmFor)
	defer warmT.Stop()
	var capC <-chan time.Time
	if proto.WarmupMax > 0 && sched == nil {
		capT := time.NewTimer(proto.WarmupMax)
		defer capT.Stop()
		capC = capT.C
	}
	elapsed, allWarm := false, false
	warmC := l.warm
warmup:
	for !(elapsed && (allWarm || sched != nil)) {
		select {
		case <-warmT.C:
			elapsed = true
		case <-warmC:
			allWarm, warmC = true, nil
		case <-capC:
			notes = append(notes, fmt.Sprintf("warmup capped at warmup_max (%s): %d of %d workers had completed a request",
				proto.WarmupMax, l.firstDone.Load(), c))
			break warmup
		case <-tick.C:
			l.collect()
			maybeLive(PhaseWarmup)
		case <-sig.interrupt:
			end = endInterrupt
			break warmup
		case <-sig.ctx:
			end = endCancel
			break warmup
		case <-sig.budget:
			end = endBudget
			break warmup
		}
	}
	run.W0 = clk.now()
	if sched != nil && end == endNormal {
		run.W0 = w0At.UnixNano()
		if k := l.firstDone.Load(); k < int64(n) {
			notes = append(notes, fmt.Sprintf(warmupLateNote+", %d of this shard's %d workers had not completed a request",
				int64(n)-k, n))
		}
	}
	run.W1 = run.W0
	var cpu0 clientSample
	if end == endNormal {
		cpu0 = sampleClient()
		// The window exists before this collect, so records that ended after W0 (while the
		// client was sampled) count in the controller's slices and completions too.
		l.win = newWindow(run.W0, slice, MinSlices, kmax)
		l.collect()
		maxEnd := run.W0 + slice*int64(kmax)
		var w1C <-chan time.Time // a shard's window ends on time, never decided or extended
		if sched != nil {
			w1T := time.NewTimer(time.Until(w1At))
			defer w1T.Stop()
			w1C = w1T.C
		}
	measure:
		for {
			select {
			case <-w1C:
				run.W1 = maxEnd
				break measure
			case <-tick.C:
				l.collect()
				if sched == nil {
					if k := l.win.decide(l.horizon, proto.MinRequests, proto.CITarget); k > 0 {
						run.W1 = run.W0 + slice*int64(k)
						break measure
					}
				}
				if clk.now() >= maxEnd {
					run.W1 = maxEnd
					break measure
				}
				maybeLive(PhaseMeasure)
			case <-sig.interrupt:
				end = endInterrupt
			case <-sig.ctx:
				end = endCancel
			case <-sig.budget:
				end = endBudget
			}
			if end != endNormal {
				run.W1 = min(clk.now(), maxEnd)
				break
			}
		}
	}

	// Drain: stop issuing; in-flight requests finish until drain_timeout, then are cancelled.
	close(l.stop)
	var cs *ClientStats
	if run.W1 > run.W0 {
		cs = sampleClient().since(cpu0)
	}
	drainFor := proto.DrainTimeout
	if sched != nil && end == endNormal {
		drainFor = time.Until(drainBy) // = drain_timeout unless the window ended late
	}
	drainT := time.NewTimer(drainFor)
	defer drainT.Stop()
	drainC := drainT.C
	timedOut := false
drain:
	for {
		select {
		case <-done:
			break drain
		case <-drainC:
			timedOut, drainC = true, nil
			l.cancelReq()
		case <-tick.C:
			l.collect()
			maybeLive(PhaseDrain)
		}
	}
	run.DrainEnd = clk.now()
	l.collect()

	records := l.all
	setPhases(records, run.W0, run.W1)
	for i := range records {
		if records[i].Status == StatusCancelled {
			run.Cancelled++
		}
	}
	if timedOut && run.Cancelled > 0 {
		notes = append(notes, fmt.Sprintf("%d requests still in flight at drain_timeout (%s) were cancelled",
			run.Cancelled, proto.DrainTimeout))
	}
	verdict := finishWindow(&run, records, proto, slice, end)
	if sched != nil && !run.Interrupted {
		// A shard holds a part of the level: steadiness and min_requests are judged on the
		// union of the shards' records by MergeShards, so this part's verdict is not given.
		run.Steady, run.NotSteadyReason, verdict = false, "one shard's part of the level: kneecap merge judges the whole", nil
	}
	notes = append(notes, verdict...)
	if cs != nil {
		cs.ConnWaitP99 = connWaitP99(records, run.W0, run.W1)
		cs.classify()
		run.Client = cs
		if cs.Bound {
			notes = append(notes, "client-bound: "+cs.Reason+"; the numbers may describe the load generator, not the server")
		}
	}
	if p.Scraper != nil && run.W1 > run.W0 {
		run.Server = p.Scraper.Summarize(run.W0, run.W1)
	}
	run.Notes = notes
	if end == endNormal && ctx.Err() != nil {
		// Hard stop during the drain: the window is complete, but the sweep ends here.
		end = endCancel
	}
	return run, records, end
}

// setPhases sets each record's phase from its send time: warmup before w0, measure in
// [w0, w1), drain from w1 on.
func setPhases(records []Record, w0, w1 int64) {
	for i := range records {
		r := &records[i]
		switch {
		case r.Sent < w0:
			r.Phase = PhaseWarmup
		case r.Sent < w1:
			r.Phase = PhaseMeasure
		default:
			r.Phase = PhaseDrain
		}
	}
}

// finishWindow computes the final slice TPS and steady verdict of the window [W0, W1) from
// every record of the level, and returns notes. For a window decided steady by the
// controller this reproduces the controller's numbers exactly: the same slices, and every
// record with a token in the window was complete when it decided.
func finishWindow(run *LevelRun, records []Record, proto Protocol, slice int64, end levelEnd) []string {
	var notes []string
	win := run.W1 - run.W0
	switch end {
	case endInterrupt, endCancel:
		run.Interrupted = true
		notes = append(notes, fmt.Sprintf("interrupted after %s of measurement", time.Duration(win).Round(time.Millisecond)))
	case endBudget:
		notes = append(notes, fmt.Sprintf("cut by the time budget after %s of measurement", time.Duration(win).Round(time.Millisecond)))
	}
	if win <= 0 {
		notes = append(notes, "no measurement window: the level ended during warmup")
		return notes
	}
	n := max(MinSlices, int(math.Round(float64(win)/float64(slice))))
	run.Slices = n
	run.SliceTPS = SliceTPS(records, run.W0, run.W1, n)
	ci, p, ok := SteadyState(run.SliceTPS, proto.CITarget)
	if math.IsNaN(ci) || math.IsNaN(p) {
		ci, p = 0, 0
		notes = append(notes, "steady-state test undefined: no output tokens in the window")
	}
	run.CIHalfWidth, run.TrendP = ci, p
	okDone := 0
	for i := range records {
		if d := records[i].Done(); records[i].OK() && d >= run.W0 && d < run.W1 {
			okDone++
		}
	}
	short := win < slice*MinSlices
	few := okDone < proto.MinRequests
	if few {
		notes = append(notes, fmt.Sprintf("only %d successful completions in the window (min_requests %d)", okDone, proto.MinRequests))
	}
	if short && end == endNormal {
		notes = append(notes, "window shorter than duration")
	}
	run.Steady = ok && !short && !few && !run.Interrupted
	switch {
	case run.Steady:
	case run.Interrupted:
		run.NotSteadyReason = "interrupted"
	case !ok:
		run.NotSteadyReason = fmt.Sprintf("the steady-state test failed (target CI half-width %.1f%%, no material trend)", 100*proto.CITarget)
	case few:
		run.NotSteadyReason = fmt.Sprintf("only %d successful completions in the window, below min_requests %d", okDone, proto.MinRequests)
	case short:
		run.NotSteadyReason = "the window is shorter than duration"
	}
	if !ok && ci > 0 {
		notes = append(notes, fmt.Sprintf("not steady after %s: 95%% CI half-width %.1f%% of mean TPS (target %.1f%%), trend p = %.3f (needs > %.2f)",
			time.Duration(win).Round(time.Millisecond), 100*ci, 100*proto.CITarget, p, TrendAlpha))
	}
	return notes
}

// connWaitP99 is the p99 (R type 7) of conn_wait over requests sent in [w0, w1).
func connWaitP99(records []Record, w0, w1 int64) time.Duration {
	var ws []float64
	for i := range records {
		if s := records[i].Sent; s >= w0 && s < w1 {
			ws = append(ws, float64(records[i].ConnWait))
		}
	}
	return durationQuantile(ws, 0.99)
}

// clientSample is a reading of the process's CPU time and scheduling-latency histogram.
type clientSample struct {
	wall  time.Time
	cpu   time.Duration
	cpuOK bool
	// runDelay is the process's threads' total run-queue wait (Linux schedstat).
	runDelay   time.Duration
	runDelayOK bool
	counts     []uint64
	bounds     []float64
}

func sampleClient() clientSample {
	s := clientSample{wall: time.Now()}
	s.cpu, s.cpuOK = processCPUTime()
	s.runDelay, s.runDelayOK = processRunDelay()
	m := []metrics.Sample{{Name: schedMetric}}
	metrics.Read(m)
	if m[0].Value.Kind() == metrics.KindFloat64Histogram {
		h := m[0].Value.Float64Histogram()
		s.counts = append([]uint64(nil), h.Counts...)
		s.bounds = h.Buckets
	}
	return s
}

// since returns the client statistics between s0 and s (ConnWaitP99 left for the caller).
func (s clientSample) since(s0 clientSample) *ClientStats {
	cs := &ClientStats{}
	wall := s.wall.Sub(s0.wall)
	if s.cpuOK && s0.cpuOK && wall > 0 {
		cs.CPUUtilization = min(1, float64(s.cpu-s0.cpu)/(float64(wall)*float64(runtime.GOMAXPROCS(0))))
	}
	if s.runDelayOK && s0.runDelayOK && wall > 0 {
		cs.RunQueueDelay = max(0, float64(s.runDelay-s0.runDelay)/(float64(wall)*float64(runtime.GOMAXPROCS(0))))
	}
	if len(s.counts) == len(s0.counts) && len(s.counts) > 0 && len(s.bounds) == len(s.counts)+1 {
		delta := make([]uint64, len(s.counts))
		var total uint64
		for i := range delta {
			delta[i] = s.counts[i] - s0.counts[i]
			total += delta[i]
		}
		if total > 0 {
			target := uint64(math.Ceil(0.99 * float64(total)))
			var cum uint64
			for i, n := range delta {
				cum += n
				if cum >= target {
					// The bucket's upper bound: a conservative p99.
					up := s.bounds[i+1]
					if math.IsInf(up, 1) {
						up = s.bounds[i]
					}
					cs.SchedLatencyP99 = time.Duration(up * float64(time.Second))
					break
				}
			}
		}
	}
	return cs
}

// classify sets Bound and Reason from the thresholds.
func (cs *ClientStats) classify() {
	var why []string
	if cs.CPUUtilization > ClientCPUBound {
		why = append(why, fmt.Sprintf("CPU %.0f%% > %.0f%%", 100*cs.CPUUtilization, 100*ClientCPUBound))
	}
	if cs.SchedLatencyP99 > ClientSchedBound {
		why = append(why, fmt.Sprintf("scheduling latency p99 %s > %s", cs.SchedLatencyP99, ClientSchedBound))
	}
	if cs.ConnWaitP99 > ClientConnWaitBound {
		why = append(why, fmt.Sprintf("conn_wait p99 %s > %s", cs.ConnWaitP99, ClientConnWaitBound))
	}
	if cs.RunQueueDelay > ClientRunQueueBound {
		why = append(why, fmt.Sprintf("run-queue wait %.0f%% of the window > %.0f%% (the machine is busy with other work)",
			100*cs.RunQueueDelay, 100*ClientRunQueueBound))
	}
	cs.Bound = len(why) > 0
	cs.Reason = strings.Join(why, ", ")
}
