package analysis

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
)

// openLoop describes an arrival-rate level run against an engine model: Poisson arrivals (or
// evenly spaced ones) at rate requests/s from 0 until the end of the window, a warmup of warm
// and a window of window, every request asking for nOut tokens, sent lag after its scheduled
// time, and in-flight requests cancelled drain after the window ends.
type openLoop struct {
	rate          float64
	nOut          int
	warm, window  time.Duration
	drain         time.Duration
	lag           time.Duration
	constant      bool
	seed          uint64
	maxConcurrent int // the client's in-flight cap (0: none): arrivals that find it full wait
	// maxWindow > window extends the window as the live clock does (DESIGN §3.9): slice by
	// slice (window ÷ 10) until the realised rate is record.RealizedWithin rate, at most
	// maxWindow; the dispatcher stops at the window's end.
	maxWindow time.Duration
	// scrape is the interval of the server's waiting-count samples (0: none).
	scrape time.Duration
}

// engine is a discrete model of a server under an open loop: serve runs recs (sorted by
// Scheduled, Sent = Scheduled + lag) until every request has ended or the deadline, when the
// rest are cancelled, and returns when each was admitted to a slot (0: never), the end of
// its wait in the server's queue.
type engine interface {
	serve(recs []record.Record, o openLoop, deadline int64) (admitted []int64)
}

// batchEngine is the simulator's batching mode (DESIGN §6) as a discrete-step model, with
// negligible prefill and an unlimited KV cache: S = MaxNumSeqs slots, a step with b running
// sequences takes StepTime(b, 0), waiting requests are admitted first come first served at
// the start of a step while a slot is free, a request's first token comes at the end of its
// admission step and each step gives every running sequence one token. All S slots busy
// complete S requests every nOut steps of StepTime(S, 0): the capacity is IdealTPS(S) ÷ nOut
// requests/s exactly, the truth the rate analysis is checked against.
type batchEngine struct{ cfg sim.Config }

// demoEngine is the demo profile's engine: 32 slots, steps of 4 ms + 250 µs per sequence.
func demoEngine() batchEngine {
	c, err := sim.Profile(sim.ProfileDemo)
	if err != nil {
		panic(err)
	}
	return batchEngine{c}
}

// capacity is the engine's true maximum sustainable rate for nOut-token requests.
func (e batchEngine) capacity(nOut int) float64 {
	return e.cfg.IdealTPS(e.cfg.MaxNumSeqs) / float64(nOut)
}

// run simulates the level and returns it as the sweep would hand it over.
func (e batchEngine) run(o openLoop, index int) record.Level { return runOpenLoop(e, o, index) }

// sweepRates runs one level per offered rate (requests/s) with o's other settings.
func (e batchEngine) sweepRates(o openLoop, rates ...float64) []record.Level {
	return sweepModel(e, o, rates...)
}

// slotEngine is a server of slots fixed-time slots (the simulator's fixed mode with
// fixed_slots, DESIGN §6): a request waits first come first served for a free slot, then
// takes ttft to its first token and itl to each further one. Its capacity is slots ÷ (ttft +
// (nOut − 1)·itl) requests/s exactly: an M/D/c queue.
type slotEngine struct {
	slots     int
	ttft, itl time.Duration
}

// service is the time one nOut-token request holds its slot.
func (e slotEngine) service(nOut int) time.Duration { return e.ttft + time.Duration(nOut-1)*e.itl }

// capacity is the engine's true maximum sustainable rate for nOut-token requests.
func (e slotEngine) capacity(nOut int) float64 { return float64(e.slots) / e.service(nOut).Seconds() }

// slotFree is a min-heap of the times the slots come free.
type slotFree []int64

func (h slotFree) Len() int           { return len(h) }
func (h slotFree) Less(i, j int) bool { return h[i] < h[j] }
func (h slotFree) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *slotFree) Push(x any)        { *h = append(*h, x.(int64)) }
func (h *slotFree) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func (e slotEngine) serve(recs []record.Record, o openLoop, deadline int64) []int64 {
	if o.maxConcurrent > 0 {
		panic("slotEngine: no client cap")
	}
	free := make(slotFree, e.slots)
	admitted := make([]int64, len(recs))
	svc := int64(e.service(o.nOut))
	for i := range recs {
		r := &recs[i]
		start := max(r.Sent, free[0])
		if start >= deadline {
			r.E2E, r.OutputTokens = time.Duration(deadline-r.Sent), 0
			continue
		}
		admitted[i] = start
		free[0] = start + svc
		heap.Fix(&free, 0)
		r.TTFT = time.Duration(start + int64(e.ttft) - r.Sent)
		if done := start + svc; done <= deadline {
			r.E2E, r.Status, r.ErrorClass = time.Duration(done-r.Sent), record.StatusOK, ""
			continue
		}
		// Cancelled at the deadline: the tokens it got (E2E to its last one), or none.
		if first := start + int64(e.ttft); first <= deadline {
			n := 1 + (deadline-first)/int64(e.itl)
			r.E2E, r.OutputTokens = time.Duration(first+(n-1)*int64(e.itl)-r.Sent), int(n)
		} else {
			r.TTFT, r.E2E, r.OutputTokens = 0, time.Duration(deadline-r.Sent), 0
		}
	}
	return admitted
}

// runOpenLoop simulates the level on e and returns it as the sweep would hand it over: its
// LevelRun (offered rate, window, steady, server metrics when o.scrape is set) and one record
// per arrival.
func runOpenLoop(e engine, o openLoop, index int) record.Level {
	const t0 = int64(1_000_000) * int64(time.Second) // an arbitrary Unix time
	rng := rand.New(rand.NewPCG(o.seed, uint64(index)))
	w0 := t0 + int64(o.warm)
	w1 := w0 + int64(max(o.window, o.maxWindow))
	var arrivals []int64
	for t := float64(t0); ; {
		gap := 1 / o.rate
		if !o.constant {
			gap = rng.ExpFloat64() / o.rate
		}
		t += gap * 1e9
		if int64(t) >= w1 {
			break
		}
		arrivals = append(arrivals, int64(t))
	}
	w1 = windowEnd(arrivals, o, w0)
	arrivals = arrivals[:sortedBelow(arrivals, w1)]
	recs := make([]record.Record, len(arrivals))
	for i, a := range arrivals {
		recs[i] = record.Record{Level: index, Scheduled: a, Sent: a + int64(o.lag), PromptTokens: 16, OutputTokens: o.nOut,
			RequestedOutputTokens: o.nOut, TokensSource: record.TokensFromUsage, Status: record.StatusCancelled, ErrorClass: record.ErrCancelled}
	}
	deadline := w1 + int64(o.drain)
	admitted := e.serve(recs, o, deadline)
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Scheduled < w0:
			r.Phase = record.PhaseWarmup
		case r.Scheduled < w1:
			r.Phase = record.PhaseMeasure
		default:
			r.Phase = record.PhaseDrain
		}
	}
	run := record.LevelRun{Index: index, Concurrency: o.maxConcurrent, OfferedRPS: o.rate, WarmupStart: t0, W0: w0, W1: w1,
		DrainEnd: deadline, Steady: true, Slices: 10}
	if o.scrape > 0 {
		run.Server = waitingStats(recs, admitted, o.scrape, t0, w0, w1)
	}
	return record.Level{Run: run, Records: recs}
}

// windowEnd is the end of the window from w0 (arrivals ascending): w0 + o.window, or, with
// o.maxWindow, the first slice boundary from there where the realised rate is
// record.RealizedWithin o.rate, else w0 + o.maxWindow.
func windowEnd(arrivals []int64, o openLoop, w0 int64) int64 {
	if o.maxWindow <= o.window {
		return w0 + int64(o.window)
	}
	slice := int64(o.window) / 10
	for w1 := w0 + int64(o.window); w1 < w0+int64(o.maxWindow); w1 += slice {
		n := sortedBelow(arrivals, w1) - sortedBelow(arrivals, w0)
		if record.RealizedWithin(float64(n)/record.WindowSeconds(w0, w1), o.rate, record.WindowSeconds(w0, w1)) {
			return w1
		}
	}
	return w0 + int64(o.maxWindow)
}

// sortedBelow is the number of ts (ascending) below t.
func sortedBelow(ts []int64, t int64) int {
	i, _ := slices.BinarySearch(ts, t)
	return i
}

// waitingStats is the server's waiting count (requests sent, not yet admitted to a slot)
// scraped every scrape from t0, summarized over [w0, w1) as the live sweep does
// (server.SummarizeSamples).
func waitingStats(recs []record.Record, admitted []int64, scrape time.Duration, t0, w0, w1 int64) *record.ServerStats {
	sent := make([]int64, 0, len(recs))
	start := make([]int64, 0, len(recs))
	for i := range recs {
		sent = append(sent, recs[i].Sent)
		a := admitted[i]
		if a == 0 {
			a = recs[i].Sent + int64(recs[i].E2E) // never admitted: waited until cancelled
		}
		start = append(start, a)
	}
	slices.Sort(sent)
	slices.Sort(start)
	var samples []server.MetricSample
	for t := t0; t < w1+int64(scrape); t += int64(scrape) {
		w := float64(sortedBelow(sent, t+1) - sortedBelow(start, t+1))
		samples = append(samples, server.MetricSample{TUnixNS: t, Waiting: &w})
	}
	st := server.SummarizeSamples(samples, w0, w1)
	if st != nil {
		st.Series = []string{"vllm:num_requests_waiting"}
	}
	return st
}

// sweepModel runs one level per offered rate (requests/s) on e with o's other settings.
func sweepModel(e engine, o openLoop, rates ...float64) []record.Level {
	out := make([]record.Level, len(rates))
	for i, r := range rates {
		o.rate = r
		out[i] = runOpenLoop(e, o, i)
	}
	return out
}

func (e batchEngine) serve(recs []record.Record, o openLoop, deadline int64) []int64 {
	type seq struct {
		i, tokens int
		first     bool
	}
	S := e.cfg.MaxNumSeqs
	var queue []int // sent, waiting for a slot
	var running []seq
	var pending []int // scheduled, waiting client-side for the cap
	next, inFlight := 0, 0
	admitted := make([]int64, len(recs))
	if len(recs) == 0 {
		return admitted
	}
	now := recs[0].Sent
	sent := make([]bool, len(recs))
	tokens := make([]int, len(recs))
	lastToken := make([]int64, len(recs))
	send := func(i int, at int64) {
		recs[i].Sent = max(recs[i].Sent, at)
		sent[i] = true
		queue = append(queue, i)
		inFlight++
	}
	for now < deadline && (next < len(recs) || len(pending) > 0 || len(queue) > 0 || len(running) > 0) {
		for next < len(recs) && recs[next].Sent <= now {
			pending = append(pending, next)
			next++
		}
		for len(pending) > 0 && (o.maxConcurrent == 0 || inFlight < o.maxConcurrent) {
			send(pending[0], recs[pending[0]].Sent)
			pending = pending[1:]
		}
		for len(queue) > 0 && len(running) < S {
			running = append(running, seq{i: queue[0], first: true})
			admitted[queue[0]] = now
			queue = queue[1:]
		}
		if len(running) == 0 {
			if next < len(recs) {
				now = max(now, recs[next].Sent) // idle: the next step starts with the next arrival
			}
			continue
		}
		now += int64(e.cfg.StepTime(len(running), 0))
		kept := running[:0]
		for _, s := range running {
			r := &recs[s.i]
			s.tokens++
			tokens[s.i], lastToken[s.i] = s.tokens, now
			if s.first {
				r.TTFT, s.first = time.Duration(now-r.Sent), false
			}
			if s.tokens < o.nOut {
				kept = append(kept, s)
				continue
			}
			r.E2E, r.Status, r.ErrorClass = time.Duration(now-r.Sent), record.StatusOK, ""
			inFlight--
		}
		running = kept
		for len(pending) > 0 && (o.maxConcurrent == 0 || inFlight < o.maxConcurrent) {
			send(pending[0], now)
			pending = pending[1:]
		}
	}
	// Cancelled at the deadline: a request never sent is "sent" then, with E2E 0; one in
	// flight keeps the tokens it got (E2E to its last one) or, with none, ends at the deadline.
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Status != record.StatusCancelled:
		case !sent[i]:
			r.Sent, r.E2E, r.OutputTokens = deadline, 0, 0
		case tokens[i] > 0:
			r.E2E, r.OutputTokens = time.Duration(lastToken[i]-r.Sent), tokens[i]
		default:
			r.E2E, r.OutputTokens = time.Duration(deadline-r.Sent), 0
		}
	}
	return admitted
}

// within reports whether got is within rel of want.
func within(got, want, rel float64) bool { return math.Abs(got/want-1) <= rel }
