package analysis

import "strings"

// The next step of each answer a run leaves open (Result.NextSteps): the "Next: …" of the
// first warning that concerns it, so that the reports' headline can end a missing answer with
// what to run or change, as the warnings do (DESIGN §4.12).

// The answers a next step belongs to: the keys of Result.NextSteps.
const (
	AnswerMaxTPS         = "max_tps"
	AnswerKnee           = "knee"
	AnswerEfficientPoint = "efficient_point"
	AnswerTTFTBlowup     = "ttft_blowup"
	AnswerSLO            = "slo"
	AnswerCapacity       = "capacity"
	AnswerReplicas       = "replicas"
)

// answersOf lists the answers warning w is about, those whose next step its "Next: …" gives;
// none for a warning that leaves no answer open. Every level excluded leaves every answer
// open.
func answersOf(w warning) []string {
	switch w.kind {
	case warnNoValidLevels:
		return []string{AnswerMaxTPS, AnswerKnee, AnswerEfficientPoint, AnswerTTFTBlowup, AnswerSLO, AnswerCapacity}
	case warnTooFewLevels:
		return []string{AnswerKnee, AnswerEfficientPoint, AnswerTTFTBlowup}
	case warnNoKneeModel, warnKneeOverload:
		return []string{AnswerKnee}
	case warnKneeSpan, warnKneeBeyond, warnKneeAtBottom:
		return []string{w.answer} // the knee or the efficient point: its constructor says which
	case warnBlowupNoTTFT, warnBlowupOneLevel, warnBlowupNone, warnBlowupUnsupported, warnBlowupAtBottom,
		warnRateBlowupNoTTFT, warnRateBlowupOneLevel, warnRateBlowupNone, warnRateBlowupUnsupported:
		return []string{AnswerTTFTBlowup}
	case warnSLOUnset, warnSLONoLevel, warnSLONoMetric, warnSLOBeyond, warnSLOFirstMisses, warnSLOCapped,
		warnSLOExcludedBelow, warnRateSLOBeyond, warnRateSLOFirstMisses:
		return []string{AnswerSLO}
	case warnRateCapacityBeyond, warnRateCapacityBelow:
		return []string{AnswerCapacity}
	}
	return nil
}

// nextOf is the next step a warning's text gives: what follows its "Next: ", up to a colon
// that explains it (outside parentheses), without a full stop; "" when it gives none.
func nextOf(text string) string {
	_, next, ok := strings.Cut(text, "Next: ")
	if !ok || strings.HasPrefix(next, "none") {
		return "" // "none: one request at a time already takes the server's throughput"
	}
	depth := 0
	for i, r := range next {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ':':
			if depth == 0 && strings.HasPrefix(next[i:], ": ") {
				return strings.TrimSuffix(next[:i], ".")
			}
		}
	}
	return strings.TrimSuffix(next, ".")
}

// noteNext records w's next step for each answer it is about that has none yet; an unset SLO's
// step (set one) replaces whatever the levels' exclusion gave: no level would find an SLO
// point that was never set.
func (ws *warnings) noteNext(w warning) {
	next := nextOf(w.text)
	if next == "" {
		return
	}
	for _, a := range answersOf(w) {
		if ws.next == nil {
			ws.next = map[string]string{}
		}
		if _, ok := ws.next[a]; !ok || w.kind == warnSLOUnset {
			ws.next[a] = next
		}
	}
}

// PlanNext is the next step of a run without a demand to size replicas for: the plan's flags
// and keys (an arrival-rate run's plan has no concurrent users; rate).
func PlanNext(rate bool) string {
	if rate {
		return "pass --plan-qps R or --plan-output-tps T (or set plan: in the config)"
	}
	return "pass --plan-users N, --plan-qps R or --plan-output-tps T (or set plan: in the config)"
}

// nextSteps is Result.NextSteps: the warnings' next steps, and the replicas' — a demand to
// size for when the run has no plan, else the SLO point's step when it left the replicas at
// the SLO point unknown; nil when there is none.
func (a *analyzer) nextSteps() map[string]string {
	next := a.warnings.next
	step := ""
	switch c := a.res.Capacity; {
	case c == nil:
		step = PlanNext(a.res.Mode.IsRate())
	case !c.ReplicasAtSLO.OK():
		step = next[AnswerSLO]
	}
	if step != "" {
		if next == nil {
			next = map[string]string{}
		}
		next[AnswerReplicas] = step
	}
	return next
}
