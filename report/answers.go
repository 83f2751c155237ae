package report

import (
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// The headline every report opens with: one short line per answer — maximum TPS, knee,
// efficient point, SLO point, TTFT blow-up, replicas; on an arrival-rate run capacity, maximum
// TPS, SLO point, TTFT blow-up rate and replicas — each with its number and its 95% interval
// where the analysis has one, a missing or bounded answer with the next step that would find
// it (analysis.Result.NextSteps). answerLines builds them once; the console, report.md and
// report.html (its cards) format them (DESIGN §5.2). The sentences of Answer follow them as the
// method text: how each was read.

// answerLine is one answer of the headline: its label; on a closed loop the place on the
// concurrency axis it is at (Of "concurrency", read "N" on a card); its value with the
// comparison it holds by ("≈ 32.6", "≤ 45.3", "≥ 128", "2667") and its unit; its 95% interval
// ("95% interval 31.8–33.5", "" when there is none); what qualifies it (Detail); and Next, the
// next step to find it, when it is missing (Missing: Detail then says why) or only bounded.
type answerLine struct {
	Label, Of, Value, Unit, Interval, Detail, Next string
	Missing                                        bool
}

// text is the line as prose: "concurrency ≈ 32.6 (95% interval 31.8–33.5); 2683 tokens/s,
// batch fit, plateau onset", a missing answer "none found; next: …".
func (l answerLine) text() string {
	var parts []string
	if !l.Missing {
		v := l.Value
		if l.Of != "" {
			v = l.Of + " " + v
		}
		if l.Unit != "" {
			v += " " + l.Unit
		}
		if l.Interval != "" {
			v += " (" + l.Interval + ")"
		}
		parts = append(parts, v)
	}
	if l.Detail != "" {
		parts = append(parts, l.Detail)
	}
	if l.Next != "" {
		parts = append(parts, "next: "+l.Next)
	}
	return strings.Join(parts, "; ")
}

// card is the line as a report.html card: "N ≈ 32.6" on a closed loop, "—" when missing.
func (l answerLine) card() card {
	c := card{Label: l.Label, Value: l.Value, Unit: l.Unit}
	if l.Of == "concurrency" {
		c.Value = "N " + l.Value
	}
	if l.Missing {
		c.Value, c.Unit = dash, ""
	}
	var det []string
	for _, s := range []string{l.Interval, l.Detail} {
		if s != "" {
			det = append(det, s)
		}
	}
	if l.Next != "" {
		det = append(det, "next: "+l.Next)
	}
	c.Detail = strings.Join(det, " · ")
	return c
}

// answerLines is the headline of res, one line per answer (the package comment above).
func answerLines(res *analysis.Result) []answerLine {
	var ls []answerLine
	if res.Mode.IsRate() {
		ls = rateAnswerLines(res)
	} else {
		ls = []answerLine{maxTPSLine(res, fmt.Sprintf("at concurrency %d", res.Throughput.MaxTPSConcurrency)), kneeLine(res)}
		if k := res.Knee; k != nil && k.Rule == analysis.RulePlateauOnset {
			ls = append(ls, efficientLine(res))
		}
		ls = append(ls, sloLine(res), blowupLine(res))
	}
	return append(ls, replicasLine(res))
}

// nextStep is res's next step for answer, "see the warnings" when it names none (an
// analysis.json from before next_steps).
func nextStep(res *analysis.Result, answer string) string {
	if s := res.NextSteps[answer]; s != "" {
		return s
	}
	return "see the warnings"
}

// missingLine is the line of an answer not found: why, and its next step.
func missingLine(res *analysis.Result, label, answer, why string) answerLine {
	return answerLine{Label: label, Detail: why, Next: nextStep(res, answer), Missing: true}
}

// interval95 is "95% interval LO–HI", or "" unless both ends are known.
func interval95(iv [2]analysis.Float) string {
	if !iv[0].OK() || !iv[1].OK() {
		return ""
	}
	lo, hi := fspan(iv[0], iv[1])
	return "95% interval " + lo + "–" + hi
}

// maxTPSLine is the largest throughput of a valid level with its level's 95% CI; at says
// where it was measured.
func maxTPSLine(res *analysis.Result, at string) answerLine {
	th := res.Throughput
	if !th.MaxTPS.OK() {
		why := "no valid level"
		if len(res.Levels) == 0 {
			why = "no level measured"
		} else if anyValid(res.Levels) {
			why = "no valid level has a measured throughput"
		}
		return missingLine(res, "Max throughput", analysis.AnswerMaxTPS, why)
	}
	l := answerLine{Label: "Max throughput", Value: fnum(th.MaxTPS), Unit: "tokens/s", Detail: at}
	if whole(res) {
		l.Unit = "input tokens/s"
	}
	if lv := maxTPSLevel(res); lv != nil && lv.OutputTPSCI95.OK() && lv.OutputTPSCI95 > 0 && !whole(res) {
		l.Interval = interval95([2]analysis.Float{th.MaxTPS - lv.OutputTPSCI95, th.MaxTPS + lv.OutputTPSCI95})
	}
	return l
}

// maxTPSLevel is the valid level the maximum TPS was measured at, by its place on the axis
// (throughput.max_tps_concurrency, or rate.max_tps_rps on an arrival-rate run), or nil.
func maxTPSLevel(res *analysis.Result) *analysis.Level {
	rate := res.Mode.IsRate()
	for i := range res.Levels {
		lv := &res.Levels[i]
		switch {
		case !lv.Valid:
		case rate && lv.IsRate() && lv.OfferedRPS == rateResult(res).MaxTPSRPS:
			return lv
		case !rate && !lv.IsRate() && lv.Concurrency == res.Throughput.MaxTPSConcurrency:
			return lv
		}
	}
	return nil
}

// kneeLine is the headline knee with its interval, throughput, fit and rule.
func kneeLine(res *analysis.Result) answerLine {
	k := res.Knee
	if k == nil || !k.Concurrency.OK() {
		return missingLine(res, "Knee", analysis.AnswerKnee, "none found")
	}
	var det []string
	if k.TPS.OK() {
		det = append(det, fnum(k.TPS)+" tokens/s")
	}
	if k.Method != "" {
		det = append(det, k.Method.Label()+" fit")
	}
	if k.Rule != "" {
		det = append(det, k.Rule.Label())
	}
	return atBottom(res, analysis.AnswerKnee, answerLine{Label: "Knee", Of: "concurrency", Value: "≈ " + fconc(k.Concurrency),
		Interval: interval95(k.Interval), Detail: strings.Join(det, ", ")})
}

// atBottom is l, the line of an answer found — a marginal-gain point (the knee or the
// efficient point) or the TTFT blow-up — as a bound with its next step when the analysis gives
// that answer one: a point found and still left open is at or below the smallest valid level
// (analysis.kneeAtBottom, analysis.blowupAtBottom), so its value is "≤" and the step measures
// lower ones.
func atBottom(res *analysis.Result, answer string, l answerLine) answerLine {
	if next := res.NextSteps[answer]; next != "" {
		l.Value = "≤ " + strings.TrimPrefix(l.Value, "≈ ")
		l.Next = next
	}
	return l
}

// efficientLine is the efficient point below a plateau-onset knee.
func efficientLine(res *analysis.Result) answerLine {
	e := res.EfficientPoint
	if e == nil || !e.Concurrency.OK() {
		return missingLine(res, "Efficient point", analysis.AnswerEfficientPoint, "none found below the knee")
	}
	det := "one more doubling adds < " + gainText(res)
	if e.TPS.OK() {
		det = fnum(e.TPS) + " tokens/s, " + det
	}
	return atBottom(res, analysis.AnswerEfficientPoint, answerLine{Label: "Efficient point", Of: "concurrency", Value: "≈ " + fconc(e.Concurrency),
		Interval: interval95(e.Interval), Detail: det})
}

// sloLine is the SLO point on the concurrency axis, what binds it and the TPS there.
func sloLine(res *analysis.Result) answerLine {
	slo := res.SLO
	names := sloNames(slo)
	if why := sloNone(slo, names, slo.MaxConcurrency.OK()); why != "" {
		return missingLine(res, "SLO point", analysis.AnswerSLO, why)
	}
	l := answerLine{Label: "SLO point", Of: "concurrency", Value: sloPoint(slo)}
	var det []string
	switch {
	case sloBeyond(slo):
		det = append(det, "met at every valid level")
		l.Next = nextStep(res, analysis.AnswerSLO)
	case slo.Bound == "between" && len(slo.Bracket) == 2:
		l.Value = fmt.Sprintf("≥ %s, < %s", fconc(slo.Bracket[0]), fconc(slo.Bracket[1]))
		det = append(det, limitName(slo.Limit)+" breached at an excluded level")
		l.Next = nextStep(res, analysis.AnswerSLO)
	default:
		l.Value = "≤ " + l.Value
		if n := limitName(slo.Limit); n != "" {
			det = append(det, n+" binds")
		}
	}
	if slo.TPS.OK() {
		det = append(det, fnum(slo.TPS)+" tokens/s")
	}
	l.Detail = strings.Join(det, ", ")
	return l
}

// blowupLine is the TTFT (an embeddings run's latency) blow-up on the concurrency axis.
func blowupLine(res *analysis.Result) answerLine {
	label := upperFirst(latencyWord(res)) + " blow-up"
	b := res.TTFTBlowup
	if b == nil || !b.Concurrency.OK() {
		return missingLine(res, label, analysis.AnswerTTFTBlowup, "none within the measured levels")
	}
	var det []string
	if b.BaselineMS.OK() {
		det = append(det, "baseline "+b.Statistic()+" "+fnum(b.BaselineMS)+" ms")
	}
	if b.Method != "" {
		det = append(det, b.Method.Label())
	}
	return atBottom(res, analysis.AnswerTTFTBlowup, answerLine{Label: label, Of: "concurrency", Value: "≈ " + fconc(b.Concurrency), Detail: strings.Join(det, ", ")})
}

// replicasLine is the capacity plan's replicas at the SLO point, and where else they were
// counted (the knee, or capacity on an arrival-rate run); without a plan, the demand to give.
func replicasLine(res *analysis.Result) answerLine {
	c := res.Capacity
	rate := res.Mode.IsRate()
	if c == nil {
		l := missingLine(res, "Replicas", analysis.AnswerReplicas, "no demand given")
		if res.NextSteps[analysis.AnswerReplicas] == "" {
			l.Next = analysis.PlanNext(rate)
		}
		return l
	}
	other := fint(c.ReplicasAtKnee) + " at the knee"
	if rate {
		other = fint(c.ReplicasAtCapacity) + " at capacity"
	}
	at := "at the SLO point"
	switch {
	case rate && res.SLO.Limit == "" && res.Rate != nil && res.Rate.SLORPS.OK():
		at = "at " + frate(res.Rate.SLORPS) + " req/s (the largest level)"
	case !rate && sloBeyond(res.SLO):
		at = "at concurrency " + fconc(res.SLO.MaxConcurrency) + " (the largest level)"
	}
	if t := planTargets(c, "concurrent users", "req/s", "output tokens/s"); t != "" {
		at += " for " + t
	}
	det := []string{at, other}
	if c.CostPerHour.OK() {
		det = append(det, fusd(c.CostPerHour)+" per hour")
	}
	l := answerLine{Label: "Replicas", Value: fint(c.ReplicasAtSLO), Unit: "replicas", Detail: strings.Join(det, ", ")}
	if !c.ReplicasAtSLO.OK() {
		l.Value, l.Unit, l.Next = dash, "", nextStep(res, analysis.AnswerReplicas)
	}
	return l
}

// rateAnswerLines are the lines of an arrival-rate run but the replicas.
func rateAnswerLines(res *analysis.Result) []answerLine {
	rr := rateResult(res)
	return []answerLine{capacityLine(res, rr), maxTPSLine(res, "at "+frate(rr.MaxTPSRPS)+" req/s offered"), sloLineRate(res, rr), blowupLineRate(res, rr)}
}

// rateResult is res's rate answer, or one with nothing found (analysis.NewRateResult) for an
// arrival-rate analysis.json without one.
func rateResult(res *analysis.Result) *analysis.RateResult {
	if res.Rate != nil {
		return res.Rate
	}
	return analysis.NewRateResult()
}

// capacityLine is the maximum sustainable rate with its interval (a lower bound has none).
func capacityLine(res *analysis.Result, rr *analysis.RateResult) answerLine {
	if !rr.CapacityRPS.OK() {
		why := "none found"
		if len(res.Levels) > 0 && !anyValid(res.Levels) {
			why = "no valid level"
		}
		return missingLine(res, "Capacity", analysis.AnswerCapacity, why)
	}
	l := answerLine{Label: "Capacity", Value: frate(rr.CapacityRPS), Unit: "req/s"}
	var det []string
	switch rr.CapacityBound {
	case "at_least":
		l.Value = "≥ " + l.Value
		det = append(det, "every level sustained its rate")
		l.Next = nextStep(res, analysis.AnswerCapacity)
	case "at_most":
		l.Value = "≈ " + l.Value
		det = append(det, "no level sustained its rate")
		l.Next = nextStep(res, analysis.AnswerCapacity)
	}
	if rr.CapacityBound != "at_least" {
		l.Interval = strings.Trim(strings.TrimSpace(rateInterval(rr.CapacityInterval)), "()")
	}
	if rr.CapacityTPS.OK() {
		det = append(det, fnum(rr.CapacityTPS)+" tokens/s")
	}
	l.Detail = strings.Join(det, ", ")
	return l
}

// sloLineRate is the SLO point on the rate axis.
func sloLineRate(res *analysis.Result, rr *analysis.RateResult) answerLine {
	slo := res.SLO
	names := sloNames(slo)
	if why := sloNone(slo, names, rr.SLORPS.OK()); why != "" {
		return missingLine(res, "SLO point", analysis.AnswerSLO, why)
	}
	l := answerLine{Label: "SLO point", Value: "≤ " + floorConc(rr.SLORPS), Unit: "req/s"}
	var det []string
	switch slo.Limit {
	case "":
		l.Value = "≥ " + frate(rr.SLORPS)
		det = append(det, "met at every valid level")
		l.Next = nextStep(res, analysis.AnswerSLO)
	case "capacity":
		det = append(det, "the capacity binds")
	default:
		det = append(det, limitName(slo.Limit)+" binds")
	}
	if rr.SLOTPS.OK() {
		det = append(det, fnum(rr.SLOTPS)+" tokens/s")
	}
	l.Detail = strings.Join(det, ", ")
	return l
}

// blowupLineRate is the TTFT blow-up rate.
func blowupLineRate(res *analysis.Result, rr *analysis.RateResult) answerLine {
	if !rr.TTFTBlowupRPS.OK() {
		return missingLine(res, "TTFT blow-up", analysis.AnswerTTFTBlowup, "none within the measured rates")
	}
	det := []string{"TTFT " + blowupStat(rr)}
	if rr.TTFTBlowupBaselineMS.OK() {
		det = append(det, "baseline "+fnum(rr.TTFTBlowupBaselineMS)+" ms")
	}
	if rr.TTFTBlowupMethod != "" {
		det = append(det, rr.TTFTBlowupMethod.Label())
	}
	return answerLine{Label: "TTFT blow-up", Value: "≈ " + frate(rr.TTFTBlowupRPS), Unit: "req/s", Detail: strings.Join(det, ", ")}
}
