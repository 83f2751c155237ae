package selfcheck

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// The client's effect on a level's numbers (DESIGN §3.3): how much the load generator's
// lateness can have moved each headline number, estimated from the records, each a fraction
// of the number. On the kernel's clock (Record.KernelClock) the latencies leave out the
// client's read lag; what remains is what that clock cannot see: chunks one late read
// gathered share its stamp (Record.FirstGather, equal chunk offsets), and a send stamped at
// the write's return (SendWrite) may be late. The load is moved by the client's turnaround
// between a stream's end and its worker's next send (closed loop), or by its lateness behind
// the schedule (open loop). Connection set-up the server forced (Record.Setup) is the
// server's, never the client's.

// DefaultClientTolerance is sweep.client_tolerance's default: a level is client-bound when
// an estimate exceeds 1% of its number.
const DefaultClientTolerance = 0.01

// Names of the load estimates of ClientStats.Effects; the latency estimates are named by
// their objective, metric_pNN (ttft_p95), and on an arrival-rate level the user's view by
// ttft_scheduled_pNN and e2e_scheduled_pNN.
const (
	EffectLoad       = "offered_load"
	effectThroughput = "throughput"
)

// effectPercentiles are the percentiles whose movement is estimated, each once the
// population holds minEffectSamples of it (a p99 of 20 requests is their largest).
var effectPercentiles = []float64{50, 95, 99}

// latencySeries is one latency of a population, as measured and as the client's lateness may
// have made it: the values moved the other way by what the clock cannot see.
type latencySeries struct {
	name string
	got  []float64   // as measured
	alts [][]float64 // each other reading of the same requests
}

// shift returns the largest relative movement of percentile p between the measured values
// and any alternative reading, or 0 when the population is too small for p.
func (s *latencySeries) shift(p float64) (float64, bool) {
	if len(s.got) < record.MinPercentileSamples(p) {
		return 0, false
	}
	base := sortedPercentile(s.got, p)
	if math.IsNaN(base) || base < 0 {
		return 0, false
	}
	worst := 0.0
	for _, alt := range s.alts {
		switch a := sortedPercentile(alt, p); {
		case base > 0:
			worst = math.Max(worst, math.Abs(a-base)/base)
		case a > 0:
			worst = 1 // read as 0 (a read that gathered most gaps), truly a: wholly off
		}
	}
	return worst, true
}

// sortedPercentile is Percentile of a copy of v, sorted.
func sortedPercentile(v []float64, p float64) float64 {
	c := slices.Clone(v)
	sort.Float64s(c)
	return record.Percentile(c, p)
}

// effectInputs gathers, over a level's latency population, what the estimates need.
type effectInputs struct {
	ttft, ttftEarly, ttftLate []float64 // TTFT as measured, without the gathered span, with a late send
	tpot, tpotGathered        []float64
	e2e, e2eLate              []float64
	itl, itlSpread            []float64
	kernel, all               int
}

// gatherSpan is what the kernel's clock cannot see of r's first content chunk: the chunks its
// read gathered after it (FirstGather) times the request's mean gap between chunks, an upper
// estimate of how much earlier the first arrived than its read's stamp.
func gatherSpan(r *record.Record) float64 {
	n := record.ChunkCount(r)
	if r.FirstGather <= 0 || n < 2 || r.E2E <= r.TTFT {
		return 0
	}
	return float64(r.FirstGather) * float64(r.E2E-r.TTFT) / float64(n-1)
}

// lateSend is how late a send stamped at the write's return may be: the time from the client's
// t_send (GotConn) to that stamp, within which the last byte was handed to the kernel.
func lateSend(r *record.Record) float64 {
	if r.SendStamp != record.SendWrite || r.ClientSent == 0 || r.Sent < r.ClientSent {
		return 0
	}
	return float64(r.Sent - r.ClientSent)
}

// add counts r, a successful request of the population.
func (in *effectInputs) add(r *record.Record) {
	in.all++
	if !r.KernelClock() || r.TTFT <= 0 {
		return
	}
	in.kernel++
	g, s := gatherSpan(r), lateSend(r)
	ttft := float64(r.TTFT)
	in.ttft = append(in.ttft, ttft)
	in.ttftEarly = append(in.ttftEarly, ttft-g)
	in.ttftLate = append(in.ttftLate, ttft+s)
	in.e2e = append(in.e2e, float64(r.E2E))
	in.e2eLate = append(in.e2eLate, float64(r.E2E)+s)
	if n := r.OutputTokens; n > 1 && r.E2E >= r.TTFT {
		in.tpot = append(in.tpot, float64(r.E2E-r.TTFT)/float64(n-1))
		in.tpotGathered = append(in.tpotGathered, (float64(r.E2E-r.TTFT)+g)/float64(n-1))
	}
	in.addGaps(r, g)
}

// addGaps adds r's gaps between its kept chunk offsets as measured, and as they were before a
// read gathered them: a run of chunks with one offset (one read) after a gap G is spread evenly
// over it, G ÷ (m + 1) each; the chunks gathered with the first come at the request's mean gap.
func (in *effectInputs) addGaps(r *record.Record, firstGap float64) {
	c := r.Chunks
	if len(c) < 2 {
		return
	}
	mean := 0.0
	if r.FirstGather > 0 {
		mean = firstGap / float64(r.FirstGather)
	}
	for i := 1; i < len(c); {
		j := i
		for j+1 < len(c) && c[j+1] == c[i] {
			j++
		}
		gap := float64(c[i]-c[i-1]) * 1e3
		for k := i; k <= j; k++ {
			in.itl = append(in.itl, gap)
			gap = 0
		}
		spread := float64(c[i]-c[i-1]) * 1e3 / float64(j-i+1)
		if c[i] == c[0] { // gathered with the first chunk: no gap before them was seen
			spread = mean
		}
		for k := i; k <= j; k++ {
			in.itlSpread = append(in.itlSpread, spread)
		}
		i = j + 1
	}
}

// latencyEffects returns the estimated movement of every latency percentile of the records
// the population selects (successful ones), keyed metric_pNN, and whether the latencies were
// on the kernel's clock for most of them (else none is estimated: the client's clock holds
// its read lag, and the heuristics judge).
func latencyEffects(records []record.Record, inPop func(*record.Record) bool) (map[string]float64, bool) {
	var in effectInputs
	for i := range records {
		if r := &records[i]; r.OK() && inPop(r) {
			in.add(r)
		}
	}
	if in.kernel == 0 || 2*in.kernel < in.all {
		return nil, false
	}
	out := make(map[string]float64)
	addShifts(out,
		latencySeries{"ttft", in.ttft, [][]float64{in.ttftEarly, in.ttftLate}},
		latencySeries{"tpot", in.tpot, [][]float64{in.tpotGathered}},
		latencySeries{"itl", in.itl, [][]float64{in.itlSpread}},
		latencySeries{"e2e", in.e2e, [][]float64{in.e2eLate}})
	return out, true
}

// addShifts sets out[name_pNN] to each series' movement at each of effectPercentiles its
// population allows.
func addShifts(out map[string]float64, series ...latencySeries) {
	for _, s := range series {
		for _, p := range effectPercentiles {
			if v, ok := s.shift(p); ok {
				out[fmt.Sprintf("%s_p%.0f", s.name, p)] = v
			}
		}
	}
}

// turnaroundShare is the closed loop's load estimate: over the requests sent in [w0, w1)
// whose worker's previous request is known with its end, the client's turnaround — the gap
// from that end (Record.End) to the send, less the pause the worker asked for and the set-up
// the server forced — as a share of the workers' cycles, the gaps between their sends. ok is
// false when no such pair exists.
func turnaroundShare(records []record.Record, w0, w1 int64) (share float64, ok bool) {
	byWorker := make(map[int][]*record.Record)
	for i := range records {
		r := &records[i]
		if r.Worker >= 0 && r.Sent > 0 {
			byWorker[r.Worker] = append(byWorker[r.Worker], r)
		}
	}
	var turn, cycle float64
	for _, rs := range byWorker {
		slices.SortFunc(rs, func(a, b *record.Record) int { return cmp.Compare(a.Seq, b.Seq) })
		for k := 1; k < len(rs); k++ {
			a, b := rs[k-1], rs[k]
			if b.Seq != a.Seq+1 || a.End <= 0 || !record.SentInWindow(b, w0, w1) || b.Sent <= a.Sent {
				continue
			}
			gap := float64(b.Sent - (a.Sent + int64(a.End)) - int64(b.Pause) - int64(b.Setup))
			turn += math.Max(gap, 0)
			cycle += float64(b.Sent - a.Sent)
		}
	}
	if cycle <= 0 {
		return 0, false
	}
	return turn / cycle, true
}

// lateness is an arrival's lateness behind its schedule that is the client's: the time from
// its scheduled arrival to its send, less its wait for a place under max_concurrency and the
// set-up the server forced.
func lateness(r *record.Record) float64 {
	return math.Max(0, float64(r.Sent-r.Scheduled-int64(r.SlotWait)-int64(r.Setup)))
}

// scheduleEffects are an arrival-rate level's estimates of the client's lateness behind the
// schedule over the arrivals of [w0, w1): on the latencies a user arriving on schedule saw
// (TTFT and E2E from the scheduled arrival, ttft_scheduled_pNN); on the offered load — a
// lateness moves arrivals across the window's edges, at most the largest lateness's worth of
// them, so its share of the window bounds the load the server received in it otherwise than
// scheduled (a jitter alone does not change a Poisson process: displaced independently, its
// points stay Poisson at the same rate; a client that falls behind moves arrivals past the
// window's end, as many as its lateness there) — and on the throughput (the mean lateness
// over the window: the tokens it moved past the window's end).
func scheduleEffects(records []record.Record, w0, w1 int64, out map[string]float64) {
	var ttft, ttftOn, e2e, e2eOn []float64
	var sent int
	var sum, most float64
	for i := range records {
		r := &records[i]
		if r.Scheduled == 0 || r.Worker < 0 || !record.ArrivedInWindow(r, w0, w1) {
			continue
		}
		l := lateness(r)
		sent++
		sum += l
		most = math.Max(most, l)
		if !r.OK() || r.TTFT <= 0 {
			continue
		}
		lag := float64(r.Lag())
		ttft, ttftOn = append(ttft, float64(r.TTFT)+lag), append(ttftOn, float64(r.TTFT)+lag-l)
		e2e, e2eOn = append(e2e, float64(r.E2E)+lag), append(e2eOn, float64(r.E2E)+lag-l)
	}
	addShifts(out,
		latencySeries{"ttft_scheduled", ttft, [][]float64{ttftOn}},
		latencySeries{"e2e_scheduled", e2e, [][]float64{e2eOn}})
	if sent == 0 || w1 <= w0 {
		return
	}
	out[EffectLoad] = most / float64(w1-w0)
	out[effectThroughput] = sum / float64(sent) / float64(w1-w0)
}

// estimate sets cs.Effects over the window [w0, w1) of records (open: an arrival-rate level)
// and reports whether the latencies were estimated (on the kernel's clock).
func estimateEffects(cs *record.ClientStats, records []record.Record, w0, w1 int64, open bool) bool {
	inPop := func(r *record.Record) bool { return record.SentInWindow(r, w0, w1) }
	if open {
		inPop = func(r *record.Record) bool { return record.ArrivedInWindow(r, w0, w1) }
	}
	eff, kernel := latencyEffects(records, inPop)
	if eff == nil {
		eff = make(map[string]float64)
	}
	if open {
		scheduleEffects(records, w0, w1, eff)
	} else if share, ok := turnaroundShare(records, w0, w1); ok {
		// Throughput grows at most in proportion to the load a closed loop offers.
		eff[EffectLoad], eff[effectThroughput] = share, share
	}
	if len(eff) > 0 {
		cs.Effects = eff
	}
	return kernel
}

// EffectDecides reports whether the estimate name decides the verdict: the headline numbers —
// TTFT, TPOT and E2E at p50 and p95, ITL at p50 (on a rate level TTFT and E2E from the
// scheduled arrival too), the offered load and the throughput. The tails (p99, ITL p95) are
// estimated and recorded but do not decide: one late read in a hundred moves a p99 by a whole
// chunk gap; the analysis warns when an SLO is set on one that moved more than the tolerance.
func EffectDecides(name string) bool {
	switch name {
	case EffectLoad, effectThroughput:
		return true
	}
	metric, pct, ok := strings.Cut(name, "_p")
	if !ok || pct == "99" {
		return false
	}
	return metric != "itl" || pct == "50"
}

// worstEffects returns the deciding estimates above tolerance (EffectDecides), largest first,
// as "name x%".
func worstEffects(eff map[string]float64, tolerance float64) []string {
	var names []string
	for k, v := range eff {
		if v > tolerance && EffectDecides(k) {
			names = append(names, k)
		}
	}
	slices.SortFunc(names, func(a, b string) int { return cmp.Or(cmp.Compare(eff[b], eff[a]), strings.Compare(a, b)) })
	out := make([]string, len(names))
	for i, k := range names {
		out[i] = fmt.Sprintf("%s %.1f%%", EffectLabel(k), 100*eff[k])
	}
	return out
}

// EffectLabel names an estimate as the reports print it: "TTFT p95", "offered load".
func EffectLabel(name string) string {
	switch name {
	case EffectLoad:
		return "offered load"
	case effectThroughput:
		return "throughput"
	}
	metric, pct, ok := strings.Cut(name, "_p")
	if !ok {
		return name
	}
	user := strings.HasSuffix(metric, "_scheduled")
	metric = strings.ToUpper(strings.TrimSuffix(metric, "_scheduled"))
	if user {
		return fmt.Sprintf("%s p%s from the scheduled arrival", metric, pct)
	}
	return fmt.Sprintf("%s p%s", metric, pct)
}

// EffectKinds are the kinds of estimate, in the order the reports quote them: each latency
// (its percentiles one kind), then the load.
var EffectKinds = []string{"ttft", "ttft_scheduled", "tpot", "itl", "e2e", "e2e_scheduled", EffectLoad, effectThroughput}

// LargestEffects returns, for each kind of estimate in eff, the name of its largest (ties to the
// name first in order, so that the reports do not change from one rendering to the next).
func LargestEffects(eff map[string]float64) map[string]string {
	best := make(map[string]string)
	for k, v := range eff {
		kind, _, _ := strings.Cut(k, "_p")
		if cur, ok := best[kind]; !ok || v > eff[cur] || (v == eff[cur] && k < cur) {
			best[kind] = k
		}
	}
	return best
}

// EffectSummary says the largest estimate of each kind, as the reports quote them: "client
// effect on TTFT p95 ≤ 0.3%, on offered load 0.8%" ("" when none was estimated).
func EffectSummary(eff map[string]float64) string {
	best := LargestEffects(eff)
	var parts []string
	for _, kind := range EffectKinds {
		if k, ok := best[kind]; ok {
			parts = append(parts, fmt.Sprintf("on %s %s", EffectLabel(k), FormatShare(eff[k])))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "client effect " + strings.Join(parts, ", ")
}

// FormatShare renders an estimate: "≤ 0.1%" below a tenth of a percent, else to 0.1%.
func FormatShare(v float64) string {
	if v < 0.001 {
		return "≤ 0.1%"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}
