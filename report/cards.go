package report

import (
	"github.com/kneecap/kneecap/analysis"
)

// card is one figure of report.html's header: what it is, the number, and what qualifies it
// (interval, rule, where it was read), the number's unit in Unit.
type card struct {
	Label, Value, Unit, Detail string
}

// cards are the figures report.html opens with, before the method text: the headline's
// lines (answerLines), a missing one "—" with why and its next step; then, with GPU
// telemetry, energy per output token and the plan's power (energyCards) (DESIGN §5.2).
func cards(res *analysis.Result) []card {
	var cs []card
	for _, l := range answerLines(res) {
		cs = append(cs, l.card())
	}
	return append(cs, energyCards(res)...)
}

// sloNone says why the headline has no SLO point, "" when it has one (found): no SLO set
// (names lists those set), no level sustains its rate (an arrival-rate run's capacity
// binds), the first level misses one, or none was checked.
func sloNone(slo analysis.SLOResult, names string, found bool) string {
	switch {
	case names == "":
		return "no SLO set"
	case found:
		return ""
	case slo.Limit == "capacity":
		return "no level sustains its rate"
	case limitName(slo.Limit) != "":
		return "missed from the first level (" + limitName(slo.Limit) + " binds)"
	}
	return "not checked against any level"
}
