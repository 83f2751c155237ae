package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// minSlices and maxSlices bound the number of batch-means slices used for the TPS confidence
// interval.
const (
	minSlices = 10
	maxSlices = 10000
)

// Validity thresholds (DESIGN §1, §4).
const (
	// MinAchievedRatio is the least achieved ÷ target concurrency of a valid level.
	MinAchievedRatio = 0.95
	// MaxLittlesLawError is the largest Little's-law error of a valid level.
	MaxLittlesLawError = 0.10
)

// withDefaults fills the zero fields of o that have defaults (KneeGain, MaxErrorRate). A zero
// SLO field stays "not used" and a zero Bootstrap stays "no intervals".
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if !(o.KneeGain > 0) || !finite(o.KneeGain) {
		o.KneeGain = d.KneeGain
	}
	if !(o.MaxErrorRate > 0) || !finite(o.MaxErrorRate) {
		o.MaxErrorRate = d.MaxErrorRate
	}
	if o.Bootstrap < 0 {
		o.Bootstrap = 0
	}
	return o
}

// Summarize computes the summary of every level from its records (DESIGN §1), in the order
// given. Zero fields of opts take their defaults (MaxErrorRate 5%); opts.SLO defines goodput;
// opts.Stop, once closed, ends it before the next level, and it returns nil: a caller that
// passes a Stop checks for it; one that passes none gets a Level for each of levels.
//
// Per level, with window [W0, W1) and T = W1 − W0:
//   - latency statistics (TTFT, TPOT, ITL, E2E) cover successful requests sent inside the
//     window; TPOT = (E2E − TTFT)/(N_out − 1) for N_out > 1; ITL pools every gap between
//     consecutive chunks, a chunk carrying k = N_out/chunks tokens (record.ChunkCount)
//     contributing gap/k with multiplicity k (k = 1 when a request has no more tokens than
//     chunks); the gaps of a record's ChunksTail (the chunks past the offsets it keeps) come
//     from its histogram, each bucket at its midpoint (within 3.1%, a level note says so);
//     without chunk offsets, each request's ITL summary contributes its mean gap (an
//     approximation the level's notes mention);
//   - output TPS counts, over every record of the level whatever its phase, the tokens of
//     chunks that arrived inside the window (k per chunk; a ChunksTail's chunks evenly spaced
//     after the last kept offset, ending at the last chunk's; without chunk offsets the N_out
//     tokens are spread evenly from TTFT to E2E), ÷ T (record.TokensInWindow); a failed
//     request's count none (record.Record.CountsTokens);
//   - QPS = successful requests with t_send + E2E in the window ÷ T; input TPS = prompt
//     tokens of requests sent inside the window ÷ T;
//   - the 95% CI half-width of output TPS comes from batch means over max(10, Slices) equal
//     slices of the window;
//   - achieved concurrency = Σ |[t_send, t_send+E2E) ∩ [W0, W1)| ÷ T over every record;
//   - Little's-law error = |QPS × mean E2E − achieved| ÷ achieved;
//   - goodput counts requests completed in the window whose TTFT, TPOT and E2E each meet the
//     SLO (per request) ÷ T, and their output tokens ÷ T;
//   - GPU figures (Level.GPU, DESIGN §4.16), where the sweep read GPU telemetry
//     (LevelRun.GPU): power, energy E, J per output token E ÷ (output TPS × T), J per
//     request E ÷ (QPS × T), output tokens per joule; null with fewer than 3 readings
//     (levelGPU). The energy above idle needs the run's idle reading: Analyze adds it.
//
// The window metrics are sweep's definitions (record.WindowTotals over record.TokensInWindow,
// record.BusyInWindow and record.CompletedInWindow; record.SentInWindow for the latency
// population), the ones the sweep's steady-state test and shard merge use.
//
// A level is invalid (Valid false, with a note each) when its window is empty, no request
// succeeded, achieved < 0.95 × target, error rate > MaxErrorRate, it was not steady,
// Little's-law error > 10%, it was interrupted, or the client was bound.
//
// An arrival-rate level (LevelRun.Mode().IsRate()) is summarized the same way over another
// latency population, the window's arrivals (population), and carries RateLevel: what its
// arrivals measure beside (arrivals; DESIGN §1, §4.15).
func Summarize(levels []record.Level, opts Options) []Level {
	opts = opts.withDefaults()
	var s scratch
	out := make([]Level, len(levels))
	rerun := supersededBy(levels)
	for i := range levels {
		if stopped(opts.Stop) {
			return nil // interrupted: nothing half summarized
		}
		out[i] = s.summarize(&levels[i].Run, levels[i].Records, opts)
		out[i].Retry = levels[i].Run.Retry
		if k, ok := rerun[levels[i].Run.Index]; ok {
			out[i].Superseded, out[i].Valid = true, false
			out[i].Notes = append(out[i].Notes, fmt.Sprintf("superseded: run again as level %d, which stands for it", k))
		}
	}
	markCancels(out)
	return out
}

// supersededBy maps the index of each level a retry stands for to the retry's index (DESIGN
// §3.4): a retry that ran to its end supersedes the run it repeats; one interrupted, cut by the
// budget or ended by a server that stopped answering does not, and both stay (a complete
// run's breach or rising latency is not lost to a retry cut short).
func supersededBy(levels []record.Level) map[int]int {
	out := make(map[int]int)
	for _, l := range levels {
		if o := l.Run.RetryOf; o != nil && !cutShort(&l.Run) {
			out[*o] = l.Run.Index
		}
	}
	return out
}

// cutShort reports whether run's window was ended before its clock would have ended it: an
// interrupt, the budget or a server that stopped answering (the sweep's notes say which).
func cutShort(run *record.LevelRun) bool {
	if run.Interrupted {
		return true
	}
	return slices.ContainsFunc(run.Notes, func(n string) bool {
		return strings.HasPrefix(n, "cut by the time budget after ") || strings.Contains(n, ": the server did not answer")
	})
}

// scratch holds buffers reused across levels.
type scratch struct {
	ttft, tpot, e2e []float64
	ttftKernel      []float64 // Record.TTFTKernel of the TTFT population, where stamped
	itl             []weighted
	clock           clockTally // the latency population's clocks
	cancel          cancelTally
}

// summarize summarises one level's records (level) and, when they name models, each model's
// (byModel).
func (s *scratch) summarize(run *record.LevelRun, records []record.Record, opts Options) Level {
	lv := s.level(run, records, opts)
	lv.ByModel = s.byModel(run, records, opts, lv.Requests)
	return lv
}

// level summarises records, those of run or a subset of them, over run's window.
func (s *scratch) level(run *record.LevelRun, records []record.Record, opts Options) Level {
	lv := emptyLevel(run)
	var open *arrivals // the open loop's own tallies; nil on a closed loop
	if run.Mode().IsRate() {
		lv.RateLevel = NewRateLevel(run.OfferedRPS)
		lv.RateLevel.TimeScale = Float(run.TimeScale)
		open = &arrivals{w0: run.W0, w1: run.W1}
	}
	win := s.begin(&lv, run, opts)
	if win == nil {
		if !opts.API.Streams() {
			wholeAnswers(&lv, nil, 0)
		}
		return lv
	}
	w0, w1 := run.W0, run.W1
	in := population(run)
	// The prefix-cache hit rate's requests: those completed in the window, or on an open
	// loop the successful ones among the window's arrivals.
	cached := func(r *record.Record) bool { return record.CompletedInWindow(r, w0, w1) }

	// One pass over every record of the level: the window's totals (every record, whatever
	// its phase or status), goodput (successful requests completed in the window, their
	// latencies from the scheduled arrival on an open loop) and the latency population.
	good := goodput{slo: opts.SLO.requestLimits(), w0: w0, w1: w1}
	var pop sentStats
	inputs := 0 // of the requests completed in the window (an embeddings level's inputs/s)
	for i := range records {
		r := &records[i]
		win.Add(r)
		if record.CompletedInWindow(r, w0, w1) {
			inputs += r.Inputs
		}
		if open == nil {
			good.add(r, 0)
		} else {
			good.add(r, r.Lag())
			open.add(r)
		}
		sent := in(r)
		if s.cancel.add(r, w0, w1, sent) {
			if sent {
				pop.requests++
				pop.addPrompt(r)
				s.addTTFT(r)
			}
			continue
		}
		if sent {
			s.addSent(&pop, r)
		}
	}
	s.fill(&lv, win, &pop, good)
	s.cancel.finish(&lv, s, float64(lv.WindowS))
	if open != nil {
		open.finish(&lv, run, win, &pop, records)
		cached = func(r *record.Record) bool { return r.OK() && in(r) }
	}
	summarizeLengths(&lv, records, in, opts.Lengths)
	summarizeUsage(&lv, records, in)
	summarizePrefixCache(&lv, run, records, cached)
	lv.Turns = turns(records, in)
	validity(&lv, run, opts, pop.ok > 0 || s.cancel.answered > 0)
	if !opts.API.Streams() {
		wholeAnswers(&lv, win, inputs)
	}
	lv.GPU = levelGPU(run.GPU, &lv, yardstickOf(opts.API).tps)
	return lv
}

// population returns the test of run's latency population (DESIGN §1): the requests sent in
// the window [W0, W1) on a closed loop; on an open loop the window's arrivals, the requests
// scheduled in it (Record.Arrival) whenever they were sent.
func population(run *record.LevelRun) func(*record.Record) bool {
	if run.Mode().IsRate() {
		w0, w1 := run.W0, run.W1
		return func(r *record.Record) bool { return record.ArrivedInWindow(r, w0, w1) }
	}
	return sentIn(run.W0, run.W1)
}

// sentIn returns the test of a request sent in [w0, w1).
func sentIn(w0, w1 int64) func(*record.Record) bool {
	return func(r *record.Record) bool { return record.SentInWindow(r, w0, w1) }
}

// begin starts lv's summary over run's window [W0, W1): on an empty window it notes it and
// judges the level (validity) and returns nil; otherwise it sets the window's length, empties
// the scratch buffers and returns the window's totals to add every record to.
func (s *scratch) begin(lv *Level, run *record.LevelRun, opts Options) *record.WindowTotals {
	w0, w1 := run.W0, run.W1
	if w1 <= w0 {
		lv.Notes = append(lv.Notes, fmt.Sprintf("invalid: empty measurement window [%d, %d)", w0, w1))
		validity(lv, run, opts, false)
		return nil
	}
	lv.WindowS = Float(record.WindowSeconds(w0, w1))
	s.ttft, s.tpot, s.e2e, s.itl = s.ttft[:0], s.tpot[:0], s.e2e[:0], s.itl[:0]
	s.ttftKernel = s.ttftKernel[:0]
	s.clock.reset()
	s.cancel = cancelTally{}
	return record.NewWindowTotals(w0, w1, min(max(run.Slices, minSlices), maxSlices))
}

// fill sets lv's numbers from the window's totals, the requests sent in the window (their
// latencies in s) and goodput.
func (s *scratch) fill(lv *Level, win *record.WindowTotals, sent *sentStats, good goodput) {
	lv.Requests = sent.requests
	lv.Errors = sent.errors
	lv.ErrorClasses = sent.classes
	if sent.requests > 0 {
		lv.ErrorRate = Float(float64(sent.errors) / float64(sent.requests))
	}
	lv.OutputTPS = Float(win.OutputTPS())
	if _, half := meanCI95(win.SliceTPS()); finite(half) {
		lv.OutputTPSCI95 = Float(half)
	}
	lv.QPS = Float(win.QPS())
	lv.InputTPS = Float(win.PerSecond(sent.promptTokens))
	lv.GoodputQPS = Float(win.PerSecond(float64(good.requests)))
	lv.GoodputTPS = Float(win.PerSecond(good.tokens))
	lv.AchievedConcurrency = Float(win.Concurrency())
	if sent.ok > 0 {
		lv.MeanOutputTokens = Float(sent.okOutputTokens / float64(sent.ok))
	}
	lv.TTFT = LatencyOf(s.ttft)
	lv.TTFTKernel = ttftSummaryOf(s.ttftKernel)
	lv.Clock, lv.TTFTClient = s.clock.clock()
	lv.TPOT = LatencyOf(s.tpot)
	lv.E2E = LatencyOf(s.e2e)
	lv.ITL = weightedLatency(s.itl)
	if sent.approxITL {
		lv.Notes = append(lv.Notes, "ITL percentiles approximated from per-request ITL summaries (chunk offsets not recorded)")
	}
	if sent.tails > 0 {
		lv.Notes = append(lv.Notes, fmt.Sprintf("ITL: %d requests streamed more chunks than a record keeps the offsets of; "+
			"their later gaps come from each record's gap histogram (within 3.1%%)", sent.tails))
	}
	if lv.AchievedConcurrency > 0 && lv.E2E.Mean.OK() {
		lv.LittlesLawError = Float(math.Abs(float64(lv.QPS)*float64(lv.E2E.Mean)/1e3-float64(lv.AchievedConcurrency)) / float64(lv.AchievedConcurrency))
	}
}

// emptyLevel returns the summary of run before its records are read: every number NaN (not
// measured), and what the LevelRun itself says (verdict, notes, server and client evidence).
func emptyLevel(run *record.LevelRun) Level {
	lv := Level{
		Concurrency:         run.Concurrency,
		ErrorRate:           NaN(),
		OutputTPS:           NaN(),
		OutputTPSCI95:       NaN(),
		QPS:                 NaN(),
		InputTPS:            NaN(),
		GoodputQPS:          NaN(),
		GoodputTPS:          NaN(),
		AchievedConcurrency: NaN(),
		LittlesLawError:     NaN(),
		MeanOutputTokens:    NaN(),
		WindowS:             NaN(),
		Steady:              run.Steady,
		LatencyRising:       run.LatencyRising,
		Refine:              run.Refine,
		TTFT:                NoLatency(),
		TPOT:                NoLatency(),
		ITL:                 NoLatency(),
		E2E:                 NoLatency(),
		TTFA:                NoLatency(),
		InputTokens:         NoTokenLengths(),
		OutputTokens:        NoTokenLengths(),
		MeanReasoningTokens: NaN(),
	}
	for _, n := range run.Notes {
		lv.Notes = append(lv.Notes, "sweep: "+n)
	}
	lv.Server = serverEvidence(run.Server)
	if run.Client != nil && run.Client.Bound {
		lv.ClientBound = true
	}
	lv.ClientEvidence, lv.ReadLag = readLagOf(run.Client)
	if cs := run.Client; cs != nil && len(cs.Effects) > 0 {
		lv.ClientEffect, lv.ClientTolerance = cs.Effects, cs.Tolerance
	}
	return lv
}

// requestSLO holds the per-request SLO limits of goodput in nanoseconds (0: not used).
type requestSLO struct{ ttft, tpot, e2e float64 }

// met reports whether r's TTFT, E2E and (with more than one output token) TPOT each meet
// their limit.
func (slo requestSLO) met(r *record.Record) bool {
	nOut := r.OutputTokens
	switch {
	case slo.ttft > 0 && float64(r.TTFT) > slo.ttft:
		return false
	case slo.e2e > 0 && float64(r.E2E) > slo.e2e:
		return false
	case slo.tpot > 0 && nOut > 1 && float64(r.E2E-r.TTFT)/float64(nOut-1) > slo.tpot:
		return false
	}
	return true
}

// goodput counts the requests completed in the window [w0, w1) that met every SLO, and their
// output tokens.
type goodput struct {
	slo      requestSLO
	w0, w1   int64
	requests int
	tokens   float64
}

// add counts r when it completed in the window and, its latencies measured from lag before
// its send (a rate level's schedule lag; 0 on a closed loop), met every SLO.
func (g *goodput) add(r *record.Record, lag time.Duration) {
	if !record.CompletedInWindow(r, g.w0, g.w1) {
		return
	}
	if lag != 0 {
		r = shifted(r, lag)
	}
	if g.slo.met(r) {
		g.requests++
		g.tokens += float64(r.OutputTokens)
	}
}

// sentStats are the sums over the requests sent in the window.
type sentStats struct {
	requests, errors, ok int
	promptTokens         float64 // of the ones whose tokens count (addPrompt)
	okOutputTokens       float64 // output tokens of the successful ones
	approxITL            bool    // some ITL came from a per-request summary
	tails                int     // requests whose chunks past the kept offsets have a tail summary
	classes              map[string]int
}

// addPrompt counts the prompt tokens of r, a request sent in the window, toward input TPS when
// its tokens count (record.Record.CountsTokens, DESIGN §1): a failed request gives no
// throughput, input or output.
func (st *sentStats) addPrompt(r *record.Record) {
	if r.CountsTokens() {
		st.promptTokens += float64(r.PromptTokens)
	}
}

// addSent counts r, a request sent in the window, in st; a successful one joins the latency
// population (TTFT, TPOT, E2E and ITL in milliseconds).
func (s *scratch) addSent(st *sentStats, r *record.Record) {
	st.requests++
	st.addPrompt(r)
	if !r.OK() {
		st.errors++
		c := string(r.ErrorClass)
		if c == "" {
			c = string(r.Status)
		}
		if st.classes == nil {
			st.classes = make(map[string]int)
		}
		st.classes[c]++
		return
	}
	nOut := r.OutputTokens
	st.ok++
	st.okOutputTokens += float64(nOut)
	s.clock.add(r)
	s.addTTFT(r)
	s.e2e = append(s.e2e, float64(r.E2E)/1e6)
	if nOut > 1 && r.TTFT > 0 && r.E2E >= r.TTFT {
		s.tpot = append(s.tpot, float64(r.E2E-r.TTFT)/1e6/float64(nOut-1))
	}
	switch {
	case len(r.Chunks) > 1 || (len(r.Chunks) == 1 && r.ChunksTail != nil):
		s.addChunkGaps(st, r)
	case len(r.Chunks) == 0 && r.ITL != nil && r.ITL.Count > 0:
		st.approxITL = true
		k := 1.0
		if nOut > r.ITL.Count+1 {
			k = float64(nOut) / float64(r.ITL.Count+1)
		}
		mean := float64(r.ITL.SumUS) / float64(r.ITL.Count) / 1e3
		s.itl = append(s.itl, weighted{mean / k, float64(r.ITL.Count) * k})
	}
}

// addTTFT adds r's TTFT, when it had a first token, to the TTFT population.
func (s *scratch) addTTFT(r *record.Record) {
	if r.TTFT > 0 {
		s.ttft = append(s.ttft, float64(r.TTFT)/1e6)
		if r.TTFTKernel > 0 {
			s.ttftKernel = append(s.ttftKernel, float64(r.TTFTKernel)/1e6)
		}
	}
}

// addChunkGaps adds the inter-chunk gaps of r, a successful request with chunk offsets, to the
// ITL population: each gap between kept offsets, then the gaps of its tail (the chunks past
// the kept offsets) from their histogram, each bucket at its midpoint (record.GapBucketMid,
// within 3.1% of every gap in it); a tail without a histogram enters at its mean gap. A
// chunk carries k = N_out ÷ the chunks seen tokens (k = 1 when N_out is not more), so a gap
// contributes gap ÷ k with multiplicity k.
func (s *scratch) addChunkGaps(st *sentStats, r *record.Record) {
	nOut, nChunks := r.OutputTokens, record.ChunkCount(r)
	k := 1.0
	if nOut > nChunks {
		k = float64(nOut) / float64(nChunks)
	}
	for j := 1; j < len(r.Chunks); j++ {
		gap := float64(r.Chunks[j]-r.Chunks[j-1]) / 1e3 // µs → ms
		s.itl = append(s.itl, weighted{gap / k, k})
	}
	tail := r.ChunksTail
	if tail == nil || tail.Count <= 0 {
		return
	}
	st.tails++
	var inGaps int64
	for _, g := range tail.Gaps {
		if g[1] <= 0 || g[0] < 0 {
			continue
		}
		inGaps += g[1]
		s.itl = append(s.itl, weighted{record.GapBucketMid(g[0]) / 1e3 / k, float64(g[1]) * k})
	}
	if inGaps == 0 { // no histogram: the mean gap
		mean := float64(max(tail.SumUS, 0)) / float64(tail.Count) / 1e3
		s.itl = append(s.itl, weighted{mean / k, float64(tail.Count) * k})
	}
}

// shifted returns a copy of r with its TTFT and E2E measured from the scheduled time (lag
// added): what the SLO of goodput judges on a rate level.
func shifted(r *record.Record, lag time.Duration) *record.Record {
	c := *r
	if c.TTFT > 0 {
		c.TTFT += lag
	}
	c.E2E += lag
	return &c
}
