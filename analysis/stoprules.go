package analysis

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Stop-rule thresholds (DESIGN §3).
const (
	// plateauGain is the largest relative TPS gain per step that counts as no gain.
	plateauGain = 0.05
	// plateauTTFT is the TTFT p50 growth over the first level that confirms saturation.
	plateauTTFT = 3.0
	// overloadFraction: TPS below this share of the best level is overload.
	overloadFraction = 0.90
)

// StopRules applies a sweep's stop rules (DESIGN §3) to the levels finished so far; it
// implements sweep.Judge. Each level is summarized as analysis.json summarizes it (Summarize
// with DefaultOptions), so the rules read the numbers the report shows.
type StopRules struct {
	Rules record.StopRules
	// API is the run's API (target.api; empty: chat): overload and plateau read its
	// yardstick's throughput and latency (an embeddings run's input tokens/s and E2E).
	API record.API
}

// Decide returns why the sweep should stop after the last level, or "". Interrupted levels
// are ignored. Rules, in order: error rate above max_error_rate; TTFT p95 above stop_ttft;
// overload (TPS below 90% of the best level); plateau (TPS gained < 5% on each of the last two
// steps and TTFT p50 ≥ 3× the first level's). On an arrival-rate level (open loop) the rules
// are the error rate, stop_ttft on TTFT measured from the scheduled arrival (what a user
// waited), and max_unsustainable levels that did not sustain their rate (decideRate): overload
// and plateau read a closed loop's throughput curve, whose open-loop counterpart is that one.
func (s StopRules) Decide(levels []record.Level) string {
	var done []record.Level
	for _, l := range levels {
		if !l.Run.Interrupted {
			done = append(done, l)
		}
	}
	if len(done) == 0 {
		return ""
	}
	opts := DefaultOptions()
	opts.API = s.API
	sums := Summarize(done, opts)
	ys := yardstickOf(s.API)
	last := &sums[len(sums)-1]
	if b := s.breach(last); b.rule != "" {
		return fmt.Sprintf("%s %s at %s is above %s", b.what, b.value, levelName(last), b.rule)
	}
	if last.IsRate() {
		return s.decideRate(sums)
	}
	if s.Rules.Overload && len(sums) >= 2 {
		best := &sums[0]
		for i := range sums[:len(sums)-1] {
			if num(ys.tps(&sums[i])) > num(ys.tps(best)) {
				best = &sums[i]
			}
		}
		if tps, top := num(ys.tps(last)), num(ys.tps(best)); tps < overloadFraction*top {
			return fmt.Sprintf("overload: %.0f tokens/s at concurrency %d is %.0f%% below the best, %.0f tokens/s at %d",
				tps, last.Concurrency, 100*(1-tps/top), top, best.Concurrency)
		}
	}
	if s.Rules.Plateau && len(sums) >= 3 {
		a, b, c := &sums[len(sums)-3], &sums[len(sums)-2], last
		first := msDuration(ys.latency(&sums[0]).P50)
		flat := num(ys.tps(b)) < (1+plateauGain)*num(ys.tps(a)) && num(ys.tps(c)) < (1+plateauGain)*num(ys.tps(b))
		if ttft := msDuration(ys.latency(c).P50); flat && first > 0 && float64(ttft) >= plateauTTFT*float64(first) {
			return fmt.Sprintf("plateau: throughput gained < %.0f%% from concurrency %d to %d and %d, %s p50 %s is %.1f× the first level's",
				100*plateauGain, a.Concurrency, b.Concurrency, c.Concurrency, ys.latencyName, ttft.Round(time.Millisecond),
				float64(ttft)/float64(first))
		}
	}
	return ""
}

// breach is a level's breach of the error-rate or stop_ttft rule: what was measured, its
// value as printed, and the rule's name and limit ("" when the level broke neither).
type breach struct{ what, value, rule string }

// breach returns the first of the error-rate and stop_ttft rules that lv breaks: the one
// check of both that the stop rules and the refiner apply.
func (s StopRules) breach(lv *Level) breach {
	if e := num(lv.ErrorRate); lv.Requests > 0 && e > s.Rules.MaxErrorRate {
		return breach{"error rate", fmt.Sprintf("%.1f%%", 100*e), fmt.Sprintf("max_error_rate %.1f%%", 100*s.Rules.MaxErrorRate)}
	}
	what := "TTFT p95"
	if lv.IsRate() {
		what = "TTFT p95 from the scheduled arrival"
	}
	if p95 := msDuration(lv.UserTTFT().P95); s.Rules.StopTTFT > 0 && p95 > s.Rules.StopTTFT {
		return breach{what, p95.Round(time.Millisecond).String(), "stop_ttft " + s.Rules.StopTTFT.String()}
	}
	return breach{}
}

// num is f, or 0 when f is not finite.
func num(f Float) float64 {
	if !f.OK() {
		return 0
	}
	return float64(f)
}

// msDuration converts milliseconds to a Duration (0 when not finite).
func msDuration(ms Float) time.Duration { return time.Duration(num(ms) * float64(time.Millisecond)) }

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
