package analysis

import (
	"fmt"
	"strconv"
	"strings"
)

// decideRate is the open-loop stop rule (DESIGN §3): stop once max_unsustainable of the
// levels so far (0 = never) did not sustain their offered rate (Level.Sustainable, the rule of
// DESIGN §4.15), for example "2 levels not sustainable (max_unsustainable 2): 13 requests/s
// offered, 10.1 completed/s; 15 offered, 10.2 completed/s". Every level counts, valid or not
// (a client-bound level above capacity stays above it): higher rates would only repeat it.
func (s StopRules) decideRate(sums []Level) string {
	if s.Rules.MaxUnsustainable <= 0 {
		return ""
	}
	var over []string
	for i := range sums {
		lv := &sums[i]
		if !lv.IsRate() || lv.Sustainable {
			continue
		}
		unit := " offered"
		if len(over) == 0 {
			unit = " requests/s offered"
		}
		over = append(over, fmt.Sprintf("%s%s, %s completed/s", formatRPS(lv.OfferedRPS), unit, formatRPS(lv.CompletionRate())))
	}
	if len(over) < s.Rules.MaxUnsustainable {
		return ""
	}
	return fmt.Sprintf("%d levels not sustainable (max_unsustainable %d): %s",
		len(over), s.Rules.MaxUnsustainable, strings.Join(over, "; "))
}

// levelName names a level as the stop reasons do: "concurrency 8", "12.5 requests/s".
func levelName(lv *Level) string {
	if lv.IsRate() {
		return formatRPS(lv.OfferedRPS) + " requests/s"
	}
	return "concurrency " + strconv.Itoa(lv.Concurrency)
}

// formatRPS formats a rate with 3 significant figures: 12.5, 0.25, 1230.
func formatRPS(f Float) string {
	if !f.OK() {
		return "?"
	}
	v := float64(f)
	if v >= 1000 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
