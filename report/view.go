package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
)

// dash stands for a value that was not computed (null in analysis.json).
const dash = "—"

// fnum formats v with about three significant digits: 2667, 22.6, 4.25, or "—".
func fnum(v analysis.Float) string { return v.Format() }

// fspan formats the ends of an interval as fnum does, with more significant digits (up to
// six) where that would print a narrow interval's ends alike ("10.07–10.08", not
// "10.1–10.1").
func fspan(lo, hi analysis.Float) (string, string) {
	a, b := fnum(lo), fnum(hi)
	for d := 4; a == b && d <= 6 && lo != hi && lo.OK() && hi.OK(); d++ {
		a, b = strconv.FormatFloat(float64(lo), 'g', d, 64), strconv.FormatFloat(float64(hi), 'g', d, 64)
	}
	return a, b
}

// fint formats v rounded to an integer, or "—".
func fint(v analysis.Float) string {
	if !v.OK() {
		return dash
	}
	return strconv.FormatFloat(math.Round(float64(v)), 'f', 0, 64)
}

// fpct formats a fraction as a percentage with one decimal, or "—".
func fpct(v analysis.Float) string {
	if !v.OK() {
		return dash
	}
	return strconv.FormatFloat(100*float64(v), 'f', 1, 64) + "%"
}

// fusd formats dollars with two decimals, or "—".
func fusd(v analysis.Float) string {
	if !v.OK() {
		return dash
	}
	return "$" + strconv.FormatFloat(float64(v), 'f', 2, 64)
}

// fconc formats a concurrency, which may be interpolated (22.6) or a level (32). A value
// within rounding error of a whole number (exp(log 64) = 63.99999999999998) is that level.
func fconc(v analysis.Float) string {
	if f := float64(v); v.OK() && math.Abs(f-math.Round(f)) <= 1e-9*math.Max(1, math.Abs(f)) {
		return fint(v)
	}
	return fnum(v)
}

// anyValid reports whether some level is valid.
func anyValid(ls []analysis.Level) bool {
	for i := range ls {
		if ls[i].Valid {
			return true
		}
	}
	return false
}

// fbool shows a flag as yes/no.
func fbool(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// sortedLevels returns the levels along the load axis, by concurrency or by offered rate (a
// copy, analysis.SortLevels).
func sortedLevels(res *analysis.Result) []analysis.Level {
	ls := append([]analysis.Level(nil), res.Levels...)
	analysis.SortLevels(ls)
	return ls
}

// Answer returns the answer of a run as sentences, in order: maximum throughput, knee (with
// its rule), efficient point (when it is not the knee), TTFT blow-up, overload, SLO point,
// operating point, capacity plan and, with GPU telemetry, energy per output token. Every
// report opens with
// them. An arrival-rate run's answer names its mode first, then its capacity with the rule
// it was read by, the maximum TPS, the unsustained levels, the TTFT blow-up rate, the SLO
// point on the rate axis, the capacity plan and which latencies were read (DESIGN §4.15).
func Answer(res *analysis.Result) []string {
	if res.Mode.IsRate() {
		return appendNonEmpty(rateAnswer(res), cancelSentence(res))
	}
	var s []string
	th := res.Throughput
	switch {
	case th.MaxTPS.OK():
		s = append(s, fmt.Sprintf("Maximum %s throughput is %s tokens/s at concurrency %d.", throughputWord(res), fnum(th.MaxTPS), th.MaxTPSConcurrency))
	case len(res.Levels) == 0:
		s = append(s, "No level was measured.")
	case !anyValid(res.Levels):
		// The levels have numbers (the table shows them); none may be used.
		s = append(s, fmt.Sprintf("No level is valid: all %d were excluded from the analysis (see warnings), so there is no maximum throughput, knee or SLO point.", len(res.Levels)))
	default:
		s = append(s, "No valid level has a measured "+throughputWord(res)+" throughput.")
	}
	s = append(s, kneeSentences(res)...)
	if b := res.TTFTBlowup; b != nil && b.Concurrency.OK() {
		ax := res.Axis()
		s = append(s, blowupSentence(upperFirst(latencyWord(res)), ax.At(fconc(b.Concurrency)), b.Method, "baseline "+b.Statistic(), b.BaselineMS, b.SlopeMSPerUser, ax.Per())+".")
	} else {
		s = append(s, "No "+latencyWord(res)+" blow-up was detected in the measured range.")
	}
	if o := res.Overload; o.Detected {
		s = append(s, fmt.Sprintf("Overload: throughput falls %s below its peak from concurrency %s.", fpct(o.DropPct/100), fconc(o.FromConcurrency)))
	}
	s = append(s, sloSentence(res))
	if op := res.OperatingPoint; op != nil && op.Concurrency.OK() {
		s = append(s, fmt.Sprintf("The operating point (maximum of %s TPS ÷ mean E2E) is concurrency %s at %s tokens/s.", throughputWord(res), fconc(op.Concurrency), fnum(op.TPS)))
	}
	if c := res.Capacity; c != nil {
		s = append(s, capacitySentence(c, res.SLO, res.EfficientPoint != nil && res.Knee != nil && res.Knee.Rule == analysis.RulePlateauOnset))
	}
	s = append(s, energySentences(res)...)
	if t := addedSentence(res); t != "" {
		s = append(s, t)
	}
	if t := reasoningSentence(res); t != "" {
		s = append(s, t)
	}
	return appendNonEmpty(s, cancelSentence(res))
}

// appendNonEmpty appends t to s unless it is "".
func appendNonEmpty(s []string, t string) []string {
	if t == "" {
		return s
	}
	return append(s, t)
}

// reasoningSentence says which TTFT the report uses when requests reasoned before they
// answered (DESIGN §1), with the time to first answer token beside it; "" otherwise.
func reasoningSentence(res *analysis.Result) string {
	var lo, hi *analysis.Level
	var reasonMin, reasonMax analysis.Float = analysis.NaN(), analysis.NaN()
	for _, l := range sortedLevels(res) {
		if !l.TTFA.P50.OK() {
			continue
		}
		if lo == nil {
			lo = &l
		}
		hi = &l
		if r := l.MeanReasoningTokens; r.OK() {
			if !reasonMin.OK() || r < reasonMin {
				reasonMin = r
			}
			if !reasonMax.OK() || r > reasonMax {
				reasonMax = r
			}
		}
	}
	if lo == nil {
		return ""
	}
	t := "Requests reasoned before they answered: TTFT here is the time to the first token, reasoning included; the time to the first answer token (TTFA) p50 is "
	if lo == hi {
		t += fmt.Sprintf("%s ms at concurrency %d", fnum(lo.TTFA.P50), lo.Concurrency)
	} else {
		t += fmt.Sprintf("%s ms at concurrency %d to %s ms at %d", fnum(lo.TTFA.P50), lo.Concurrency, fnum(hi.TTFA.P50), hi.Concurrency)
	}
	switch {
	case reasonMin.OK() && reasonMin == reasonMax:
		t += fmt.Sprintf(", after %s reasoning tokens on average", fnum(reasonMin))
	case reasonMin.OK():
		t += fmt.Sprintf(", after %s–%s reasoning tokens on average", fnum(reasonMin), fnum(reasonMax))
	}
	return t + "."
}

// addedSentence names the levels the sweep added after its planned ones (sweep.refine), or "".
func addedSentence(res *analysis.Result) string {
	var cs []string
	for _, l := range sortedLevels(res) {
		if l.Refine != "" {
			cs = append(cs, strconv.Itoa(l.Concurrency))
		}
	}
	switch len(cs) {
	case 0:
		return ""
	case 1:
		return fmt.Sprintf("Concurrency %s was added after the planned levels, where an answer lay farthest from a measured level (sweep.refine).", cs[0])
	}
	return fmt.Sprintf("Concurrencies %s and %s were added after the planned levels, each where an answer lay farthest from a measured level (sweep.refine).",
		strings.Join(cs[:len(cs)-1], ", "), cs[len(cs)-1])
}

func sloSentence(res *analysis.Result) string {
	slo := res.SLO
	names := sloNames(slo)
	if names == "" {
		return "No SLO was set."
	}
	if !slo.MaxConcurrency.OK() {
		// Limit names the SLO the first valid level misses; without it nothing was checked
		// (no valid level, or none reports the latencies the SLO is set on).
		l := limitName(slo.Limit)
		if l == "" {
			return "The SLO (" + names + ") could not be checked against any level (see warnings)."
		}
		return "Not even the first level meets the SLO (" + names + "); " + l + " binds."
	}
	if sloBeyond(slo) {
		// max_concurrency is the largest valid level, not a limit that was found.
		t := fmt.Sprintf("The SLO (%s) holds at every valid level, so the SLO point is %s, beyond the measured range", names, sloPoint(slo))
		var at []string
		if slo.TPS.OK() {
			at = append(at, fnum(slo.TPS)+" tokens/s")
		}
		if slo.GoodputQPS.OK() {
			at = append(at, "a goodput of "+fnum(slo.GoodputQPS)+" requests/s")
		}
		if len(at) > 0 {
			t += fmt.Sprintf("; at concurrency %s: %s", fconc(slo.MaxConcurrency), strings.Join(at, " and "))
		}
		return t + "."
	}
	if slo.Bound == "between" && len(slo.Bracket) == 2 {
		// Capped by an excluded level's breach: the last valid level meeting the SLOs, not an
		// interpolation (DESIGN §4.7).
		t := fmt.Sprintf("The SLO (%s) holds up to concurrency %s, the largest valid level measured to meet it; the limit lies between %s and %s: %s",
			names, fconc(slo.Bracket[0]), fconc(slo.Bracket[0]), fconc(slo.Bracket[1]), slo.Evidence)
		if slo.TPS.OK() {
			t += fmt.Sprintf("; at concurrency %s: %s tokens/s", fconc(slo.Bracket[0]), fnum(slo.TPS))
		}
		return t + "."
	}
	t := fmt.Sprintf("The SLO (%s) holds up to concurrency %s", names, sloPoint(slo))
	if b := slo.Bracket; len(b) == 2 && b[0].OK() && b[1].OK() && b[0] < b[1] {
		t += fmt.Sprintf(" (measured: %s meets it, %s does not)", fconc(b[0]), fconc(b[1]))
	}
	if slo.TPS.OK() {
		t += fmt.Sprintf(" with %s tokens/s", fnum(slo.TPS))
	}
	if slo.GoodputQPS.OK() {
		t += fmt.Sprintf(" and a goodput of %s requests/s", fnum(slo.GoodputQPS))
		if slo.GoodputConcurrency > 0 {
			// Measured at the last passing level, not interpolated to the SLO point.
			t += fmt.Sprintf(" (measured at concurrency %d)", slo.GoodputConcurrency)
		}
	}
	if l := limitName(slo.Limit); l != "" {
		t += "; " + l + " binds first"
	}
	return t + "."
}

// sloBeyond reports whether every valid level meets the SLOs. Analysis then sets
// max_concurrency to the largest valid level and leaves limit empty (it names the binding
// SLO whenever a level misses one), so the SLO point lies beyond the measured range.
func sloBeyond(slo analysis.SLOResult) bool {
	return slo.MaxConcurrency.OK() && slo.Limit == ""
}

// sloPoint formats the SLO point: "45.3", "≥ 128" when every valid level meets the SLOs, or
// "—". The point is an upper bound ("holds up to"), so it is rounded down at the reports'
// precision: 101.75 between a passing 64 and a failing 102 reads 101, never 102.
func sloPoint(slo analysis.SLOResult) string {
	if sloBeyond(slo) {
		return "≥ " + fconc(slo.MaxConcurrency)
	}
	return floorConc(slo.MaxConcurrency)
}

// floorConc formats a concurrency as fconc does, rounded down instead of to nearest.
func floorConc(v analysis.Float) string {
	f := float64(v)
	if !v.OK() || math.Abs(f-math.Round(f)) <= 1e-9*math.Max(1, math.Abs(f)) || f <= 0 || f >= 1e6 {
		return fconc(v)
	}
	d := 2
	switch {
	case f >= 100:
		d = 0
	case f >= 10:
		d = 1
	}
	p := math.Pow(10, float64(d))
	return strconv.FormatFloat(math.Floor(f*p)/p, 'f', d, 64)
}

// capacitySentence states the capacity plan. When every valid level meets the SLOs, the
// replicas "at the SLO point" were computed at the largest level, and the sentence says so.
// eff adds the replicas and cost at the efficient point (when it is not the knee itself).
func capacitySentence(c *analysis.Capacity, slo analysis.SLOResult, eff bool) string {
	t := planHead(c)
	at := "the SLO point"
	if sloBeyond(slo) && c.ReplicasAtSLO.OK() {
		at = fmt.Sprintf("concurrency %s (the largest level; the SLO point is %s)", fconc(slo.MaxConcurrency), sloPoint(slo))
	}
	t += replicasAtSLO(c) + fmt.Sprintf(" at %s, %s at the knee", at, fint(c.ReplicasAtKnee))
	if eff {
		t += fmt.Sprintf(", %s at the efficient point", fint(c.ReplicasAtEfficientPoint))
	}
	if c.CostPerMTokens.OK() || c.CostPerMTokensAtKnee.OK() {
		at := "the SLO point"
		if sloBeyond(slo) && c.CostPerMTokens.OK() {
			at = "concurrency " + fconc(slo.MaxConcurrency)
		}
		t += fmt.Sprintf("; %s per 1M output tokens at %s, %s at the knee", fusd(c.CostPerMTokens), at, fusd(c.CostPerMTokensAtKnee))
		if eff {
			t += fmt.Sprintf(", %s at the efficient point", fusd(c.CostPerMTokensAtEfficientPoint))
		}
	}
	return t + "."
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// fitNotes describes the fitted models' parameters, one line per model fitted (none on an
// arrival-rate run, whose rules the method table states).
func fitNotes(res *analysis.Result) []string {
	if res.Mode.IsRate() {
		return nil
	}
	var out []string
	th := res.Throughput
	if u := th.USL; u != nil {
		t := fmt.Sprintf("%s: σ = %s, κ = %s, λ = %s tokens/s per request, R² = %s", analysis.MethodUSL.Label(), fsci(u.Sigma), fsci(u.Kappa), fnum(u.Lambda), fr2(u.R2))
		if !u.PeakConcurrency.OK() {
			out = append(out, t+", no peak N* (N* = √((1 − σ) ÷ κ) needs κ > 0 and σ < 1)")
		} else {
			t += ", peak N* = " + fnum(u.PeakConcurrency)
			if u.PeakConcurrencyInterval[0].OK() && u.PeakConcurrencyInterval[1].OK() {
				t += fmt.Sprintf(" (95%% interval %s–%s)", fnum(u.PeakConcurrencyInterval[0]), fnum(u.PeakConcurrencyInterval[1]))
			}
			out = append(out, t+fmt.Sprintf(", X(N*) = %s tokens/s", fnum(u.PeakTPS)))
		}
	}
	// A slot limit or breakpoint at the largest valid level is where the fit ran out of data,
	// not a plateau that was measured.
	top := 0.0
	for _, l := range res.Levels {
		if l.Valid {
			top = math.Max(top, float64(l.Concurrency))
		}
	}
	unmeasured := func(c analysis.Float) string {
		if top > 0 && c.OK() && float64(c) >= top*(1-1e-9) {
			return " (at the largest valid level: no plateau was measured)"
		}
		return ""
	}
	if b := th.Batch; b != nil {
		out = append(out, fmt.Sprintf("%s: X(N) = m ÷ (α + β·m), m = min(N, S): slot limit S = %s, plateau X(S) = %s tokens/s%s, α = %s ms, β = %s ms per running sequence (one decode step per token takes α + β·m), R² = %s",
			analysis.MethodBatch.Label(), fnum(b.Limit), fnum(b.PlateauTPS), unmeasured(b.Limit), fnum(b.Alpha*1e3), fsci(b.Beta*1e3), fr2(b.R2)))
	}
	if l := res.ServerLimit; l != nil && l.Slots.OK() {
		t := fmt.Sprintf("the server's own limit: %s requests at once (%s)", fconc(l.Slots), l.Describe())
		if b := th.Batch; b != nil && b.Limit.OK() {
			t += fmt.Sprintf(", against the batch model's slot limit S = %s fitted from throughput alone", fnum(b.Limit))
		}
		out = append(out, t)
	}
	if h := th.Hinge; h != nil {
		out = append(out, fmt.Sprintf("%s: breakpoint %s, plateau %s tokens/s%s, slope %s tokens/s per request, R² = %s", analysis.MethodHinge.Label(), fnum(h.Breakpoint), fnum(h.PlateauTPS), unmeasured(h.Breakpoint), fnum(h.Slope), fr2(h.R2)))
	}
	if k := th.Kneedle; k != nil {
		t := fmt.Sprintf("%s: knee %s (%s tokens/s)", analysis.MethodKneedle.Label(), fnum(k.Knee), fnum(k.KneeTPS))
		if k.Shape != "" {
			t += ", shape " + k.Shape
		}
		out = append(out, t)
	}
	return append(out, kneeNotes(res)...)
}

// fsci formats small model coefficients with three significant digits.
func fsci(v analysis.Float) string {
	if !v.OK() {
		return dash
	}
	return strconv.FormatFloat(float64(v), 'g', 3, 64)
}

// fr2 formats a coefficient of determination with three decimals.
func fr2(v analysis.Float) string {
	if !v.OK() {
		return dash
	}
	return strconv.FormatFloat(float64(v), 'f', 3, 64)
}

// errorClasses formats a level's failures by class, e.g. "http_429 31, stream_broken 2".
func errorClasses(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	var parts []string
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s %d", n, m[n]))
	}
	return strings.Join(parts, ", ")
}

// subtitle names the run: model · endpoint · date · source.
func subtitle(m analysis.Meta) string {
	var parts []string
	for _, s := range []string{m.Model, m.Server.Name(), m.Endpoint, m.Date} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if m.LoadGenerators > 1 {
		load := fmt.Sprintf("load from %d kneecap processes", m.LoadGenerators)
		if m.Clocks != "" {
			load += " (" + m.Clocks + ")"
		}
		parts = append(parts, load)
	}
	return strings.Join(parts, " · ")
}

// provenance says what was measured and by what: the server's own description (engine,
// version, limits, and where it said so), kneecap's version and how the prompts were sized
// in the server's tokens (DESIGN §3.6); "" when none is known.
func provenance(m analysis.Meta) string {
	var parts []string
	if m.Server != nil {
		parts = append(parts, fmt.Sprintf("Server: %s (from %s)", m.Server, m.Server.From))
	}
	if m.Kneecap != "" {
		parts = append(parts, "measured by kneecap "+m.Kneecap)
	}
	if p := m.PromptSizing; p != nil {
		note := ""
		if len(p.Notes) > 0 {
			note = " (" + strings.Join(p.Notes, "; ") + ")"
		}
		parts = append(parts, "prompts sized by "+p.String()+note)
	}
	return strings.Join(parts, " · ")
}

// clientEvidence says what decided a level's client-bound verdict (DESIGN §3.3): " (read lag
// p99 0.3 ms)" when the kernel's receive timestamps did, " (heuristics)" when CPU, scheduling
// latency and run-queue wait did, "" when the level does not say.
func clientEvidence(l *analysis.Level) string {
	switch {
	case l.ClientEvidence == record.EvidenceEstimates && len(l.ClientEffect) > 0:
		return " (" + selfcheck.EffectSummary(decidingEffects(l.ClientEffect)) + ")"
	case l.ClientEvidence == record.EvidenceReadLag && l.ReadLag != nil:
		return fmt.Sprintf(" (read lag p99 %.2f ms)", l.ReadLag.P99MS)
	case l.ClientEvidence == record.EvidenceHeuristics:
		return " (heuristics)"
	}
	return ""
}

// joinAnd joins items as "a", "a and b", "a, b and c".
func joinAnd(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	return strings.Join(items[:len(items)-1], ", ") + " and " + items[len(items)-1]
}

// noBlowup is the sentence of a run without a TTFT blow-up.
const noBlowup = "No TTFT blow-up was detected in the measured range."

// blowupSentence states a TTFT blow-up without its full stop: "TTFT blows up past concurrency
// 8 (hinge; baseline p50 120 ms; then +9 ms per added request)". what is what blows up, past
// the place on the load axis, base the baseline's name and per the axis's unit.
func blowupSentence(what, past string, method analysis.Method, base string, baseMS, slope analysis.Float, per string) string {
	t := what + " blows up past " + past
	var det []string
	if method != "" {
		det = append(det, method.Label())
	}
	if baseMS.OK() {
		det = append(det, base+" "+fnum(baseMS)+" ms")
	}
	if slope.OK() {
		det = append(det, "then +"+fnum(slope)+" ms per added "+per)
	}
	if len(det) > 0 {
		t += " (" + strings.Join(det, "; ") + ")"
	}
	return t
}

// replicasAtSLO states the replicas at the SLO point with their GPUs and cost per hour (those
// of the replicas at the SLO point): ": 3 replicas (6 GPUs, $12.00 per hour)".
func replicasAtSLO(c *analysis.Capacity) string {
	t := fmt.Sprintf(": %s replicas", fint(c.ReplicasAtSLO))
	var of []string
	if c.GPUs.OK() {
		of = append(of, fint(c.GPUs)+" GPUs")
	}
	if c.CostPerHour.OK() {
		of = append(of, fusd(c.CostPerHour)+" per hour")
	}
	if len(of) > 0 {
		t += " (" + strings.Join(of, ", ") + ")"
	}
	return t
}

// planHead opens the capacity plan's sentence with its targets: "Capacity plan for 100
// concurrent users and 5000 output tokens/s" (an arrival-rate run's plan has no users).
func planHead(c *analysis.Capacity) string {
	if t := planTargets(c, "concurrent users", "requests/s", "output tokens/s"); t != "" {
		return "Capacity plan for " + t
	}
	return "Capacity plan"
}

// planTargets joins the plan's targets with " and ", each followed by its unit: users for
// the concurrent users, rps for the requests/s, tps for the output tokens/s; "" when none
// is set.
func planTargets(c *analysis.Capacity, users, rps, tps string) string {
	var target []string
	if c.ConcurrentUsers > 0 {
		target = append(target, fmt.Sprintf("%d %s", c.ConcurrentUsers, users))
	}
	if c.QPS > 0 {
		target = append(target, fnum(analysis.Float(c.QPS))+" "+rps)
	}
	if c.OutputTPS > 0 {
		target = append(target, fnum(analysis.Float(c.OutputTPS))+" "+tps)
	}
	return strings.Join(target, " and ")
}
