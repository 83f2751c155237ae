package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// kneeSentences states the headline knee, by its rule (DESIGN §4.3), and the efficient point
// when it is not the knee itself: the second and third sentences of Answer.
func kneeSentences(res *analysis.Result) []string {
	k := res.Knee
	if k == nil || !k.Concurrency.OK() {
		return []string{"No throughput knee was found (see warnings)."}
	}
	t := fmt.Sprintf("The throughput knee is at concurrency %s", fconc(k.Concurrency))
	if k.TPS.OK() {
		t += fmt.Sprintf(" (%s tokens/s)", fnum(k.TPS))
	}
	t += intervalText(k.Interval)
	if k.Method != "" {
		t += ", from the " + k.Method.Label() + " fit"
	}
	if others := otherEstimates(k); others != "" {
		t += " (other estimates: " + others + ")"
	}
	switch k.Rule {
	case analysis.RulePlateauOnset:
		t += ": the onset of the throughput plateau, the " + breakpointOf(k.Method) + "; past it throughput stops growing."
	case analysis.RuleMarginalGain:
		t += fmt.Sprintf(": past it, one more doubling of concurrency adds less than %s throughput.", gainText(res))
	default:
		// An analysis.json of a kneecap before the rule was recorded: the knee was always the
		// marginal-gain point.
		t += ": past it, one more doubling of concurrency adds less than the knee gain in throughput."
	}
	if k.Rule != "" && k.RuleReason != "" {
		t += fmt.Sprintf(" Rule (%s): %s.", k.Rule.Label(), k.RuleReason)
	}
	if k.Evidence != "" {
		t += " Server evidence: " + k.Evidence + "."
	}
	out := []string{t}
	if k.Rule != analysis.RulePlateauOnset {
		return out
	}
	e := res.EfficientPoint
	if e == nil || !e.Concurrency.OK() {
		return append(out, "No efficient point (where one more doubling adds less than the knee gain) was found below the knee (see warnings).")
	}
	t = fmt.Sprintf("The efficient point is concurrency %s", fconc(e.Concurrency))
	if e.TPS.OK() {
		t += fmt.Sprintf(" (%s tokens/s)", fnum(e.TPS))
	}
	t += intervalText(e.Interval)
	if e.Method != "" {
		t += ", on the " + e.Method.Label() + " fit"
	}
	return append(out, t+fmt.Sprintf(": past it, one more doubling of concurrency adds less than %s throughput.", gainText(res)))
}

// intervalText is ", 95% interval LO–HI", or "" without an interval.
func intervalText(iv [2]analysis.Float) string {
	if iv[0].OK() && iv[1].OK() {
		return fmt.Sprintf(", 95%% interval %s–%s", fnum(iv[0]), fnum(iv[1]))
	}
	return ""
}

// gainText is the knee gain as a percentage ("10%"), or "the knee gain" when unknown.
func gainText(res *analysis.Result) string {
	if e := res.EfficientPoint; e != nil && e.Gain.OK() && e.Gain > 0 {
		return fmt.Sprintf("%.3g%%", float64(e.Gain)*100)
	}
	return "the knee gain"
}

// breakpointOf names the breakpoint a plateau-onset knee is, by the model it was read from.
func breakpointOf(m analysis.Method) string {
	switch m {
	case analysis.MethodBatch:
		return "batch model's slot limit S"
	case analysis.MethodHinge:
		return "hinge breakpoint"
	}
	return "breakpoint of the " + m.Label() + " fit"
}

// otherEstimates lists the estimates of knee.Others by method, sorted, leaving out the one
// a plateau-onset knee is (the batch model's S or the hinge breakpoint: the knee itself).
func otherEstimates(k *analysis.Knee) string {
	methods := make([]analysis.Method, 0, len(k.Others))
	for m := range k.Others {
		if k.Rule == analysis.RulePlateauOnset && m == k.Method {
			continue
		}
		methods = append(methods, m)
	}
	slices.Sort(methods)
	var parts []string
	for _, m := range methods {
		parts = append(parts, m.EstimateLabel()+" "+fnum(k.Others[m]))
	}
	return strings.Join(parts, ", ")
}

// kneeCell is the compare table's knee: "32.6 (31.8–33.5, batch, plateau onset)", the
// interval "—" when there is none; "—" without a knee.
func kneeCell(k *analysis.Knee) string {
	if k == nil || !k.Concurrency.OK() {
		return dash
	}
	parts := []string{dash}
	if k.Interval[0].OK() && k.Interval[1].OK() {
		parts[0] = fnum(k.Interval[0]) + "–" + fnum(k.Interval[1])
	}
	if k.Method != "" {
		parts = append(parts, k.Method.Label())
	}
	if k.Rule != "" {
		parts = append(parts, k.Rule.Label())
	}
	return fconc(k.Concurrency) + " (" + strings.Join(parts, ", ") + ")"
}

// efficientCell is the compare table's efficient point: "25.0 (24.3–25.8)", or "—".
func efficientCell(e *analysis.EfficientPoint) string {
	if e == nil || !e.Concurrency.OK() {
		return dash
	}
	iv := dash
	if e.Interval[0].OK() && e.Interval[1].OK() {
		iv = fnum(e.Interval[0]) + "–" + fnum(e.Interval[1])
	}
	return fconc(e.Concurrency) + " (" + iv + ")"
}

// kneeNotes are the Fitted models lines of the headline's rule and the efficient point.
func kneeNotes(res *analysis.Result) []string {
	var out []string
	if k := res.Knee; k != nil && k.Rule != "" && k.RuleReason != "" {
		out = append(out, fmt.Sprintf("headline knee rule: %s, from the %s fit: %s", k.Rule.Label(), k.Method.Label(), k.RuleReason))
	}
	if e := res.EfficientPoint; e != nil && e.Concurrency.OK() {
		out = append(out, fmt.Sprintf("efficient point: N = %s (%s tokens/s%s) on the %s fit, where one more doubling adds less than %s",
			fnum(e.Concurrency), fnum(e.TPS), intervalText(e.Interval), e.Method.Label(), gainText(res)))
	}
	return out
}
