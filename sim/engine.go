package sim

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// maxLag is how far behind its absolute schedule the engine may fall and still catch up by
// running steps back to back; beyond it the schedule restarts from now, so a long stall of
// the process does not turn into a burst of catch-up steps.
const maxLag = 50 * time.Millisecond

// submitBuffer is the capacity of the engine's submission channel.
const submitBuffer = 1024

// request is one generation request, shared by its HTTP handler and the engine goroutine.
type request struct {
	// seq is the request's arrival sequence number (1, 2, ...); random draws derive from it.
	seq uint64
	// prompt is the prompt length in tokens.
	prompt int
	// target is the number of output tokens the request will generate.
	target int
	// slowdown is the cost of the request's model relative to the base model's (1 for the
	// base, an adapter's Slowdown; adapters.go).
	slowdown float64

	// generated is the number of tokens generated so far; written by the engine only.
	generated atomic.Int64
	// notify (capacity 1) is signalled after generated changes; it coalesces, so a slow
	// reader never blocks the engine and memory per request stays bounded.
	notify chan struct{}
	// gone is set by the handler when its client has left; the engine then frees the request
	// at its next step.
	gone atomic.Bool
	// left is the Done channel of the handler's context (nil: none), closed when its client
	// disconnects: the engine reads it too, so that a client that left frees its slot at the
	// next step even before its handler has run again to set gone.
	left <-chan struct{}
	// blocks are the hashes of the prompt's full KV blocks (prefix caching; nil when off),
	// computed by the handler before submission.
	blocks []uint64
	// cached is the prompt tokens found in the prefix cache at the first admission; written
	// by the engine before the request's first token, read by the handler after its last.
	cached atomic.Int64

	// Engine-goroutine state.
	prefillLeft   int     // tokens still to prefill (prompt, plus generated tokens on recompute)
	kvAlloc       int     // KV tokens allocated against the capacity
	kvActive      int     // KV tokens holding attention state (prefilled + generated)
	promptCounted bool    // prompt tokens added to the prompt-token counter
	looked        bool    // looked up in the prefix cache once (cached is set)
	finished      bool    // produced its last token in the current step
	credit        float64 // tokens earned towards the next one (slowdown > 1: 1 ÷ slowdown a step)
}

func newRequest(seq uint64, prompt, target int) *request {
	return &request{seq: seq, prompt: prompt, target: target, slowdown: 1, notify: make(chan struct{}, 1)}
}

// earn adds a decoding step's credit to r and reports whether r produces a token in it: every
// step for the base model, every slowdown-th step (on average) for an adapter's request.
func (r *request) earn() bool {
	if r.slowdown <= 1 {
		return true
	}
	r.credit += 1 / r.slowdown
	if r.credit < 1-1e-9 {
		return false
	}
	r.credit--
	return true
}

// hasLeft reports whether the request's client has gone: its handler said so, or its
// context is done.
func (r *request) hasLeft() bool {
	if r.gone.Load() {
		return true
	}
	select {
	case <-r.left:
		return true
	default:
		return false
	}
}

// signal wakes the request's reader without blocking.
func (r *request) signal() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Stats is a snapshot of the engine's state and counters.
type Stats struct {
	// Running is the number of requests holding a decode slot (batching), holding a fixed slot
	// (fixed mode with fixed_slots) or in flight (fixed mode, unlimited).
	Running int
	// Waiting is the number of requests in the FCFS waiting queue (0 in fixed mode, unlimited).
	Waiting int
	// KVTokensUsed is the number of KV-cache tokens allocated.
	KVTokensUsed int
	// KVCacheTokens is the KV capacity in tokens; 0 means unlimited.
	KVCacheTokens int
	// Preemptions counts requests evicted from the batch because the KV cache was exhausted.
	Preemptions int64
	// PromptTokens counts prompt tokens prefilled (each request's prompt once).
	PromptTokens int64
	// GenerationTokens counts output tokens generated.
	GenerationTokens int64
	// Steps counts engine steps run (batching mode).
	Steps int64
	// PrefixQueryTokens counts the prompt tokens looked up in the prefix cache, at each
	// request's first admission only (a re-admission after preemption looks up again but is
	// not counted, as vLLM V1 counts it apart); 0 when caching is off.
	PrefixQueryTokens int64
	// PrefixHitTokens counts the prompt tokens those first lookups found cached.
	PrefixHitTokens int64
	// SpinWall is the wall time the engine spent burning steps (compute spin; 0 with sleep).
	SpinWall time.Duration
	// SpinCPU is the CPU time the engine's thread got during SpinWall, and SpinQueued the time
	// it was ready to run but waited for a core (the machine's other load); both 0 where the
	// OS does not report a thread's scheduling times (Linux's /proc/thread-self/schedstat).
	SpinCPU, SpinQueued time.Duration
}

// KVUsage is the fraction of the KV cache allocated, in [0, 1]; 0 when unlimited.
func (s Stats) KVUsage() float64 {
	if s.KVCacheTokens <= 0 {
		return 0
	}
	return float64(s.KVTokensUsed) / float64(s.KVCacheTokens)
}

// engine is the continuous-batching model. All fields below mu are owned by the engine
// goroutine (run), or by the caller of step in benchmarks.
type engine struct {
	cfg    Config
	submit chan *request
	stop   <-chan struct{}

	mu    sync.Mutex
	stats Stats
	// inbox counts requests offered to submit that the last published stats do not yet
	// show: offer raises it before sending, publish lowers it by what the engine took since
	// the previous publish. Kept under mu with stats so that a snapshot counts every
	// request exactly once, wherever it is between the handler and the waiting queue.
	inbox int
	taken int // enqueued since the last publish; engine goroutine only
	// busy meters the published running count over time for the GPUs' power (GPUs > 0).
	busy busyMeter

	waiting   []*request // FCFS; head first
	running   []*request // admission order, oldest first
	producers []*request // requests that produce a token at the end of the current step
	kvAlloc   int
	kvActive  int
	preempts  int64
	promptTok int64
	genTok    int64
	steps     int64

	prefix        *prefixCache // nil when prefix caching is off
	prefixQueries int64
	prefixHits    int64

	spin spinner // compute spin: the step burner and what it measured
}

// newEngine returns an engine for cfg; origin is the server's start, the origin of its busy
// meter.
func newEngine(cfg Config, stop <-chan struct{}, origin time.Time) *engine {
	e := &engine{
		cfg:    cfg,
		submit: make(chan *request, submitBuffer),
		stop:   stop,
		stats:  Stats{KVCacheTokens: cfg.KVCacheTokens},
		busy:   newBusyMeter(origin, cfg.PowerSlots()),
	}
	if cfg.PrefixCaching {
		e.prefix = newPrefixCache(cfg.PrefixCacheCapacity())
	}
	return e
}

// snapshot returns the last published stats; Waiting includes submissions the engine has
// not yet published (still in its channel, or taken but not yet published).
func (e *engine) snapshot() Stats {
	e.mu.Lock()
	st := e.stats
	st.Waiting += e.inbox
	e.mu.Unlock()
	return st
}

// offer hands r to the engine goroutine. It fails when ctx is done or the engine stops
// before the engine takes r.
func (e *engine) offer(ctx context.Context, stopped <-chan struct{}, r *request) error {
	e.mu.Lock()
	e.inbox++
	e.mu.Unlock()
	select {
	case e.submit <- r:
		return nil
	case <-ctx.Done():
		e.withdraw()
		return ctx.Err()
	case <-stopped:
		e.withdraw()
		return errStopped
	}
}

func (e *engine) withdraw() {
	e.mu.Lock()
	e.inbox--
	e.mu.Unlock()
}

// busyAt reads the busy meter now.
func (e *engine) busyAt() busyReading {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.busy.read(time.Now())
}

// publish copies the engine state into the stats snapshot. With GPUs it meters a change of
// the running count as it is published, so the power integral follows exactly the count that
// vllm:num_requests_running reports; the clock is read only at a change.
func (e *engine) publish() {
	e.mu.Lock()
	if n := len(e.running); e.cfg.GPUs > 0 && n != e.stats.Running {
		e.busy.set(n, time.Now())
	}
	e.stats = Stats{
		Running:           len(e.running),
		Waiting:           len(e.waiting),
		KVTokensUsed:      e.kvAlloc,
		KVCacheTokens:     e.cfg.KVCacheTokens,
		Preemptions:       e.preempts,
		PromptTokens:      e.promptTok,
		GenerationTokens:  e.genTok,
		Steps:             e.steps,
		PrefixQueryTokens: e.prefixQueries,
		PrefixHitTokens:   e.prefixHits,
		SpinWall:          e.spin.wall,
		SpinCPU:           e.spin.cpu,
		SpinQueued:        e.spin.queued,
	}
	e.inbox -= e.taken
	e.taken = 0
	e.mu.Unlock()
}

// run is the engine goroutine: it runs steps against an absolute schedule (the end of step k+1
// is the end of step k plus step k+1's duration) until stop is closed. With compute spin it
// burns each step on its own OS thread; idle, it blocks either way.
func (e *engine) run() {
	wait := e.sleepUntil
	if e.cfg.Compute == computeSpin {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		e.spin.open()
		defer e.spin.close()
		wait = e.spinUntil
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var next time.Time // end of the previous step
	for {
		if len(e.running) == 0 && len(e.waiting) == 0 {
			select {
			case r := <-e.submit:
				e.take(r)
			case <-e.stop:
				return
			}
			next = time.Now()
		}
		e.drain()
		d := e.begin()
		e.publish()
		end := next.Add(d)
		if now := time.Now(); now.Sub(end) > maxLag {
			end = now
		}
		if !wait(timer, end) {
			return
		}
		e.finish()
		next = end
	}
}

// sleepUntil waits for t while accepting submissions; it reports false when the engine is
// stopped.
func (e *engine) sleepUntil(timer *time.Timer, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-e.stop:
			return false
		default:
			return true
		}
	}
	timer.Reset(d)
	for {
		select {
		case <-timer.C:
			return true
		case r := <-e.submit:
			e.take(r)
			e.publish()
		case <-e.stop:
			return false
		}
	}
}

// drain moves every pending submission to the waiting queue without blocking.
func (e *engine) drain() {
	for {
		select {
		case r := <-e.submit:
			e.take(r)
		default:
			return
		}
	}
}

// take queues a request received from submit (offered): the next publish shows it as
// waiting and drops it from the inbox count.
func (e *engine) take(r *request) {
	e.enqueue(r)
	e.taken++
}

func (e *engine) enqueue(r *request) {
	r.prefillLeft = r.prompt
	e.waiting = append(e.waiting, r)
}

// begin plans one step: it frees requests whose clients left, preempts when the KV cache
// cannot hold one more token per running sequence, admits waiting requests FCFS, and
// schedules prefill. It returns the step's duration.
func (e *engine) begin() time.Duration {
	e.reap()
	e.preempt()
	e.admit()
	budget := e.cfg.MaxBatchedTokens
	prefilled := 0.0 // prompt tokens prefilled in the step, each weighted by its slowdown
	seqs := 0        // sequences decoding in the step, producing a token or not
	e.producers = e.producers[:0]
	for _, r := range e.running {
		if r.prefillLeft > 0 {
			n := min(r.prefillLeft, budget)
			if n == 0 {
				continue
			}
			r.prefillLeft -= n
			r.kvActive += n
			e.kvActive += n
			budget -= n
			prefilled += float64(n) * r.slowdown
			if r.prefillLeft > 0 {
				continue
			}
		}
		seqs++
		if !r.earn() {
			continue
		}
		e.producers = append(e.producers, r)
	}
	d := e.cfg.StepTime(seqs, e.kvActive)
	if prefilled > 0 {
		d += time.Duration(prefilled / e.cfg.PrefillTPS * float64(time.Second))
	}
	e.steps++
	return d
}

// finish ends the step: every producer gets one token; finished requests leave the batch.
// The new state is published before readers are woken, so a client that has seen its last
// token also sees it counted in Stats.
func (e *engine) finish() {
	reserve := e.reserves()
	for _, r := range e.producers {
		if !r.promptCounted {
			r.promptCounted = true
			e.promptTok += int64(r.prompt)
		}
		if e.prefix != nil && r.generated.Load() == 0 {
			// The prefill completed in this step: its prompt's full blocks are cached (a
			// re-admitted request that already streamed tokens inserted them before).
			e.prefix.insert(r.blocks)
		}
		r.finished = r.generated.Load()+1 >= int64(r.target)
		e.genTok++
		r.kvActive++
		e.kvActive++
		if !reserve {
			r.kvAlloc++
			e.kvAlloc++
		}
	}
	kept := e.running[:0]
	for _, r := range e.running {
		if r.finished {
			e.release(r)
			continue
		}
		kept = append(kept, r)
	}
	clear(e.running[len(kept):])
	e.running = kept
	// Published before a reader can see the new tokens: a client that has read its last token
	// is no longer running in the stats, and every token it read is counted.
	e.publish()
	for _, r := range e.producers {
		r.generated.Add(1)
		r.signal()
	}
	clear(e.producers)
	e.producers = e.producers[:0]
}

// reserves reports whether admission reserves a request's full length (prompt + output) in
// the KV cache: a limited cache without preemption.
func (e *engine) reserves() bool {
	return e.cfg.KVCacheTokens > 0 && !e.cfg.Preemption
}

// release returns a request's KV allocation.
func (e *engine) release(r *request) {
	e.kvAlloc -= r.kvAlloc
	e.kvActive -= r.kvActive
	r.kvAlloc, r.kvActive = 0, 0
}

// reap frees requests whose clients have gone.
func (e *engine) reap() {
	kept := e.running[:0]
	for _, r := range e.running {
		if r.hasLeft() {
			e.release(r)
			continue
		}
		kept = append(kept, r)
	}
	clear(e.running[len(kept):])
	e.running = kept
	w := e.waiting[:0]
	for _, r := range e.waiting {
		if !r.hasLeft() {
			w = append(w, r)
		}
	}
	clear(e.waiting[len(w):])
	e.waiting = w
}

// preempt evicts the most recently admitted running requests (recompute preemption, as vLLM
// does) until the KV cache has room for one more token per running sequence. An evicted
// request returns to the head of the waiting queue; its KV is discarded and rebuilt by
// prefilling prompt + generated tokens when it is admitted again. Tokens already streamed stay
// streamed.
func (e *engine) preempt() {
	if e.cfg.KVCacheTokens <= 0 || !e.cfg.Preemption {
		return
	}
	for len(e.running) > 0 && e.kvAlloc+len(e.running) > e.cfg.KVCacheTokens {
		last := len(e.running) - 1
		r := e.running[last]
		e.running[last] = nil
		e.running = e.running[:last]
		e.release(r)
		r.prefillLeft = r.prompt + int(r.generated.Load())
		e.waiting = append(e.waiting, nil)
		copy(e.waiting[1:], e.waiting)
		e.waiting[0] = r
		e.preempts++
	}
}

// admit moves waiting requests into the batch, first come first served and without skipping,
// while a decode slot and KV room are free. With a limited cache and no preemption a request
// reserves prompt + output tokens; with preemption it needs room for its prefill plus one
// token for every running sequence.
func (e *engine) admit() {
	n := 0
	for _, r := range e.waiting {
		if len(e.running) >= e.cfg.MaxNumSeqs {
			break
		}
		need := r.prefillLeft
		if e.reserves() {
			need = r.prompt + r.target
		}
		if c := e.cfg.KVCacheTokens; c > 0 {
			extra := 0
			if e.cfg.Preemption {
				extra = len(e.running) + 1
			}
			if e.kvAlloc+need+extra > c {
				break
			}
		}
		r.kvAlloc = need
		e.kvAlloc += need
		if e.prefix != nil {
			e.prefixLookup(r)
		}
		e.running = append(e.running, r)
		n++
	}
	if n > 0 {
		m := copy(e.waiting, e.waiting[n:])
		clear(e.waiting[m:])
		e.waiting = e.waiting[:m]
	}
}
