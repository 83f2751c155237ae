package analysis

import (
	"math"
	"math/rand/v2"
	"time"

	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// openLoop describes an arrival-rate level run against batchEngine: Poisson arrivals (or
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

// run simulates the level and returns it as the sweep would hand it over: its LevelRun
// (offered rate, window, steady) and one record per arrival.
func (e batchEngine) run(o openLoop, index int) sweep.Level {
	const t0 = int64(1_000_000) * int64(time.Second) // an arbitrary Unix time
	rng := rand.New(rand.NewPCG(o.seed, uint64(index)))
	w0 := t0 + int64(o.warm)
	w1 := w0 + int64(o.window)
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
	recs := make([]sweep.Record, len(arrivals))
	for i, a := range arrivals {
		recs[i] = sweep.Record{Level: index, Scheduled: a, Sent: a + int64(o.lag), PromptTokens: 16, OutputTokens: o.nOut,
			RequestedOutputTokens: o.nOut, TokensSource: sweep.TokensFromUsage, Status: sweep.StatusCancelled, ErrorClass: sweep.ErrCancelled}
	}
	e.serve(recs, o, w1+int64(o.drain))
	for i := range recs {
		r := &recs[i]
		switch {
		case r.Scheduled < w0:
			r.Phase = sweep.PhaseWarmup
		case r.Scheduled < w1:
			r.Phase = sweep.PhaseMeasure
		default:
			r.Phase = sweep.PhaseDrain
		}
	}
	run := sweep.LevelRun{Index: index, Concurrency: o.maxConcurrent, OfferedRPS: o.rate, WarmupStart: t0, W0: w0, W1: w1,
		DrainEnd: w1 + int64(o.drain), Steady: true, Slices: 10}
	return sweep.Level{Run: run, Records: recs}
}

// serve runs the engine over recs (sorted by Scheduled) until every request has ended or the
// deadline, when the rest are cancelled. With o.maxConcurrent > 0 a request is sent only once
// fewer than that many are in flight (its Sent is then later than Scheduled + lag).
func (e batchEngine) serve(recs []sweep.Record, o openLoop, deadline int64) {
	type seq struct {
		i, tokens int
		first     bool
	}
	S := e.cfg.MaxNumSeqs
	var queue []int // sent, waiting for a slot
	var running []seq
	var pending []int // scheduled, waiting client-side for the cap
	next, inFlight := 0, 0
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
			r.E2E, r.Status, r.ErrorClass = time.Duration(now-r.Sent), sweep.StatusOK, ""
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
		case r.Status != sweep.StatusCancelled:
		case !sent[i]:
			r.Sent, r.E2E, r.OutputTokens = deadline, 0, 0
		case tokens[i] > 0:
			r.E2E, r.OutputTokens = time.Duration(lastToken[i]-r.Sent), tokens[i]
		default:
			r.E2E, r.OutputTokens = time.Duration(deadline-r.Sent), 0
		}
	}
}

// sweepRates runs one level per offered rate (requests/s) with o's other settings.
func (e batchEngine) sweepRates(o openLoop, rates ...float64) []sweep.Level {
	out := make([]sweep.Level, len(rates))
	for i, r := range rates {
		o.rate = r
		out[i] = e.run(o, i)
	}
	return out
}

// within reports whether got is within rel of want.
func within(got, want, rel float64) bool { return math.Abs(got/want-1) <= rel }
