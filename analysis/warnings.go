package analysis

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Every warning of Analyze and CompareGate is built by the *warnings.go files, one
// constructor per kind (a line of fixedTexts for a text that takes nothing from the run);
// the phases only decide when to warn. Result.Warnings holds the texts.

// warnKind tells the kinds of warning apart (one per constructor or line of fixedTexts).
type warnKind int

const (
	warnLevelDropped warnKind = iota
	warnLevelExcluded
	warnLevelImprecise
	warnNoValidLevels
	warnTooFewLevels
	warnZeroThroughput
	warnFitFailed
	warnUSLNoPeak
	warnKneedleNone
	warnKneedleEdge
	warnNoKneeModel
	warnKneeSpan
	warnKneeBeyond
	warnKneeAtBottom
	warnKneeDisagree
	warnKneeGap
	warnKneeNoPlateau
	warnKneeOverload
	warnBootstrapFewLevels
	warnBootstrapFewValues
	warnBlowupNoTTFT
	warnBlowupOneLevel
	warnBlowupNone
	warnBlowupGap
	warnBlowupUnsupported
	warnBlowupAtBottom
	warnOverload
	warnOverloadNoise
	warnNoOperatingPoint
	warnOperatingMedian
	warnOperatingBeyond
	warnSLOUnreported
	warnSLOHigherPercentile
	warnSLOUnset
	warnSLONoLevel
	warnSLONoMetric
	warnSLOOtherGoodput
	warnSLOBeyond
	warnSLOFirstMisses
	warnSLOCapped
	warnSLOExcludedBelow
	warnSLOBreachContradicted
	warnSLOClientEffect
	warnSLOThinLevel
	warnSLOGoodputUnknown
	warnCapacityNoTarget
	warnCapacityNoSLO
	warnCapacityNoKnee
	warnCapacityPastBreach
	warnGateOtherSLOs
	warnPromptLengthOff
	warnOutputLengthIgnored
	warnServerLimit
	warnUsageDisbelieved
	warnUsageRechecked
	warnModelSlower
	warnCancelNotFreed
	warnCancelUnchecked
	warnCancelTTFTLowerBound
)

// warning is one warning: its kind and subject (what it is about, when one kind can be
// about several things), which de-duplicate it, and its text.
type warning struct {
	kind    warnKind
	subject string
	text    string
	// answer is the answer (Answer*) the warning leaves open where its kind alone does not
	// say: the knee or the efficient point, for the marginal-gain point's warnings.
	answer string
}

// newWarning returns the warning of kind about subject, its text format's with args.
func newWarning(kind warnKind, subject, format string, args ...any) warning {
	return warning{kind: kind, subject: subject, text: fmt.Sprintf(format, args...)}
}

// fixed returns the warning of kind, one whose text takes nothing from the run (fixedTexts).
func fixed(kind warnKind) warning { return warning{kind: kind, text: fixedTexts[kind]} }

// fixedTexts holds the text of each kind of warning that takes nothing from the run.
var fixedTexts = map[warnKind]string{
	warnSLOUnset:            "slo: no usable SLO: no SLO point. Next: set one (slo.ttft_p95, tpot_p95, e2e_p95 or another metric_pNN in the configuration, or --slo ttft:p99:2s)",
	warnSLONoLevel:          "slo: no valid level to check the SLOs against: no SLO point. Next: see why the levels were excluded (the warnings above)",
	warnSLONoMetric:         "slo: no valid level reports a latency the SLOs are set on: no SLO point. Next: set an SLO on a latency the levels report (--slo ttft:p99:2s)",
	warnSLOGoodputUnknown:   "slo: goodput at the SLO point unknown: the levels carry no goodput_qps",
	warnCapacityNoTarget:    "capacity: a replica cost is set but no target load (concurrent_users, qps or output_tps): no plan",
	warnCapacityNoSLO:       "capacity: no SLO point: replicas at the SLO are unknown (the slo warning says what would find it)",
	warnCapacityNoKnee:      "capacity: no knee: replicas at the knee are unknown (the knee warnings say what would find it)",
	warnBlowupNoTTFT:        "no TTFT blow-up: no valid level has a TTFT p50. Next: see why the levels were excluded (the warnings above)",
	warnNoOperatingPoint:    "no operating point: no valid level has a mean or median E2E",
	warnOperatingMedian:     "operating point: mean E2E missing for some levels; E2E p50 used in its place",
	warnRateBlowupNoTTFT:    "no TTFT blow-up rate: no valid level has a TTFT (p50, mean, p90 or p95). Next: see why the levels were excluded (the warnings above)",
	warnRateCapacityUnknown: "capacity: no capacity: replicas at capacity are unknown",
}

// pointName names the marginal-gain point answer is (AnswerKnee, AnswerEfficientPoint) in a
// warning's text: "knee" or "efficient point".
func pointName(answer string) string {
	if answer == AnswerEfficientPoint {
		return "efficient point"
	}
	return "knee"
}

// beyond suggests the levels that extend a sweep past top: two more doublings.
func beyond(top float64) string {
	return fmt.Sprintf("add %s and %s to --levels", fconcurrency(2*top), fconcurrency(4*top))
}

// lowerLevels suggests the levels below lo to measure: its half and quarter, at least 1.
func lowerLevels(lo float64) string {
	a, b := math.Max(1, math.Floor(lo/4)), math.Max(1, math.Floor(lo/2))
	if a == b {
		return fconcurrency(a)
	}
	return fconcurrency(a) + " and " + fconcurrency(b)
}

// levelsAt names levels with detail(l) each, as the warnings that name several do:
// "concurrency 1 (…), 2 (…)", or on an arrival-rate run "10 requests/s (…), 20 requests/s
// (…)".
func levelsAt(levels []*Level, detail func(*Level) string) string {
	parts := make([]string, len(levels))
	for i, l := range levels {
		if l.IsRate() {
			parts[i] = fmt.Sprintf("%s requests/s (%s)", l.OfferedRPS.Format(), detail(l))
		} else {
			parts[i] = fmt.Sprintf("%d (%s)", l.Concurrency, detail(l))
		}
	}
	out := strings.Join(parts, ", ")
	if len(levels) > 0 && !levels[0].IsRate() {
		out = "concurrency " + out
	}
	return out
}

// fconcurrency formats a count of requests: 4, 4.5.
func fconcurrency(v float64) string { return strconv.FormatFloat(v, 'g', 4, 64) }

// warnings collects the warnings of one analysis in order.
type warnings struct {
	list []warning
	// next holds the next step of each answer some warning left open (noteNext).
	next map[string]string
}

// add appends w and notes its next step.
func (ws *warnings) add(w warning) {
	ws.list = append(ws.list, w)
	ws.noteNext(w)
}

// addOnce appends w unless a warning of its kind and subject is already there.
func (ws *warnings) addOnce(w warning) {
	for _, o := range ws.list {
		if o.kind == w.kind && o.subject == w.subject {
			return
		}
	}
	ws.add(w)
}

// texts returns the warnings' texts, never nil.
func (ws *warnings) texts() []string {
	out := make([]string, 0, len(ws.list))
	for _, w := range ws.list {
		out = append(out, w.text)
	}
	return out
}
