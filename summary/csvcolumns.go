package summary

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/analysis"
)

// The columns of a level-summary CSV (DESIGN §4.13), for either load axis: a table with
// concurrency holds closed-loop levels; one with rate_rps in place of concurrency holds
// arrival-rate (open-loop) levels, such as a published table of vLLM `bench serve
// --request-rate` results, or the summary.csv of a rate run.

// rateLatencies are the latency columns of a rate level beside the closed loop's:
// <prefix>_<stat>_ms for each of csvLatencyStats.
var rateLatencies = []string{"schedule_lag", "ttft_scheduled", "e2e_scheduled"}

// rateLateColumns are the rate columns added after the prefix-cache ones (columns are
// appended, never reordered): realized_rps.
var rateLateColumns = []string{"realized_rps"}

// rateOnlyColumns are the columns a rate table has and a closed-loop one does not: rate_rps,
// achieved_rps, sustainable, backlog_growth_rps, the schedule lag and latencies from the
// scheduled arrival, then rateLateColumns.
func rateOnlyColumns() []string {
	cols := []string{"rate_rps", "achieved_rps", "sustainable", "backlog_growth_rps"}
	for _, m := range rateLatencies {
		for _, s := range csvLatencyStats {
			cols = append(cols, m+"_"+s+"_ms")
		}
	}
	return append(cols, rateLateColumns...)
}

// rateCSVColumns returns the columns WriteCSV writes for arrival-rate levels, in order:
// rate_rps (the offered rate, requests/s) in place of concurrency, the other columns of
// csvColumns before the prefix-cache ones, then achieved_rps, sustainable, backlog_growth_rps
// and the schedule_lag_*, ttft_scheduled_* and e2e_scheduled_* statistics in ms
// (analysis.RateLevel), then the prefix-cache columns, then realized_rps (the window's
// arrivals ÷ its length), then imprecise and latency_rising. ReadCSV accepts any subset that includes rate_rps and output_tps.
func rateCSVColumns() []string {
	rate := rateOnlyColumns()
	early := rate[:len(rate)-len(rateLateColumns)]
	return slices.Concat(early[:1], baseColumns()[1:], early[1:], prefixColumns, rateLateColumns, verdictColumns)
}

// rateLateCells are l's cells of rateLateColumns.
func rateLateCells(l *analysis.Level) []string {
	if l.RateLevel == nil {
		return []string{""}
	}
	return []string{csvNum(l.RealizedRPS)}
}

// rateRow turns row, l's row of csvColumns, into its row of rateCSVColumns.
func rateRow(l *analysis.Level, row []string) []string {
	rl := l.RateLevel
	if rl == nil {
		rl = analysis.NewRateLevel(math.NaN())
	}
	out := append([]string{csvNum(rl.OfferedRPS)}, row[1:]...)
	out = append(out, csvNum(rl.AchievedRPS), strconv.FormatBool(rl.Sustainable), csvNum(rl.BacklogGrowthRPS))
	rates := analysis.Level{RateLevel: rl} // whose LatencyOf reads rl's latencies
	for _, m := range rateLatencies {
		for _, s := range csvLatencyStats {
			out = append(out, csvNum(*rates.LatencyOf(m).Stat(s)))
		}
	}
	return out
}

// requireColumns checks that the header has output_tps and exactly one of concurrency and
// rate_rps.
func (h *csvHeader) requireColumns() error {
	fail := func(col, why string) error {
		return fmt.Errorf("%s:%d: column %q: %s", h.name, h.line, col, why)
	}
	switch {
	case h.seen["concurrency"] && h.seen["rate_rps"]:
		return fail("rate_rps", "a table has concurrency (closed-loop levels) or rate_rps (arrival-rate levels), not both")
	case !h.seen["concurrency"] && !h.seen["rate_rps"]:
		return fail("concurrency", "required column missing (or rate_rps, for arrival-rate levels)")
	case !h.seen["output_tps"]:
		return fail("output_tps", "required column missing")
	}
	if !h.seen["rate_rps"] {
		for _, c := range rateOnlyColumns() {
			if h.seen[c] {
				return fail(c, "an arrival-rate column in a table of concurrency levels (give rate_rps in place of concurrency)")
			}
		}
	}
	return nil
}

// newLevel returns a new level of the table: valid, steady, every measurement null, with the
// rate fields (sustainable, offered rate null until its cell) in a rate table.
func (h *csvHeader) newLevel() analysis.Level {
	lv := newLevel()
	if h.seen["rate_rps"] {
		lv.RateLevel = analysis.NewRateLevel(math.NaN())
	}
	return lv
}

// rateCell stores the (trimmed) cell of a rate column col in lv and reports whether col is
// one; fail formats an error naming the file, line and column. rate_rps must be a positive
// number (realized_rps a non-negative one), backlog_growth_rps any finite number, sustainable true or false, the others
// non-negative numbers; an empty cell is null (rate_rps: an error).
func (h *csvHeader) rateCell(lv *analysis.Level, col, cell string, fail func(string, ...any) error) (bool, error) {
	rl := lv.RateLevel
	if rl == nil || !slices.Contains(rateOnlyColumns(), col) {
		return false, nil
	}
	if col == "sustainable" {
		if cell == "" {
			return true, nil
		}
		b, err := strconv.ParseBool(cell)
		if err != nil {
			return true, fail("%q is not true or false", cell)
		}
		rl.Sustainable = b
		return true, nil
	}
	if cell == "" {
		if col == "rate_rps" {
			return true, fail("required value is empty")
		}
		return true, nil
	}
	v, err := parseFinite(cell, fail)
	switch {
	case err != nil:
		return true, err
	case col == "rate_rps" && !(v > 0):
		return true, fail("%q: the offered rate must be positive (requests/s)", cell)
	case v < 0 && col != "backlog_growth_rps":
		return true, fail("%q: must not be negative", cell)
	}
	switch {
	case col == "rate_rps":
		rl.OfferedRPS = analysis.Float(v)
	case col == "achieved_rps":
		rl.AchievedRPS = analysis.Float(v)
	case col == "realized_rps":
		rl.RealizedRPS = analysis.Float(v)
	case col == "backlog_growth_rps":
		rl.BacklogGrowthRPS = analysis.Float(v)
	default:
		for _, m := range rateLatencies {
			for _, st := range csvLatencyStats {
				if col == m+"_"+st+"_ms" {
					*lv.LatencyOf(m).Stat(st) = analysis.Float(v)
				}
			}
		}
	}
	return true, nil
}

// levelKey names a level of a level-summary table by the column that identifies it:
// "concurrency 8", or "rate_rps 2.5" for an arrival-rate level (for checks across rows, such
// as two rows of one level).
func levelKey(l *analysis.Level) string {
	if l.RateLevel != nil {
		return "rate_rps " + strconv.FormatFloat(float64(l.OfferedRPS), 'g', -1, 64)
	}
	return "concurrency " + strconv.Itoa(l.Concurrency)
}

// prefixCells are l's cells of prefixColumns: empty when its hit rate is unknown.
func prefixCells(l *analysis.Level) []string {
	if l.PrefixCache == nil {
		return []string{"", ""}
	}
	return []string{csvNum(l.PrefixCache.HitRate), l.PrefixCache.Source}
}

// prefixCell stores the cell of a prefix-cache column col in lv and reports whether col is
// one: the hit rate a fraction in [0, 1], the source one analysis writes or wrote (empty:
// null).
func prefixCell(lv *analysis.Level, col, cell string, fail func(string, ...any) error) (bool, error) {
	if !slices.Contains(prefixColumns, col) {
		return false, nil
	}
	if cell == "" {
		return true, nil
	}
	pc := lv.PrefixCache
	if pc == nil {
		pc = &analysis.PrefixCache{HitRate: analysis.NaN(), UsageHitRate: analysis.NaN()}
		lv.PrefixCache = pc
	}
	if col == "prefix_cache_source" {
		if !analysis.KnownPrefixSource(cell) {
			return true, fail("%q: a prefix-cache source is %s, %s or %s", cell, analysis.PrefixFromCounters, analysis.PrefixFromUsage, analysis.PrefixFromGauge)
		}
		pc.Source = cell
		return true, nil
	}
	v, err := strconv.ParseFloat(cell, 64)
	if err != nil || !(v >= 0 && v <= 1) {
		return true, fail("%q: a hit rate is a fraction in [0, 1]", cell)
	}
	pc.HitRate = analysis.Float(v)
	return true, nil
}

// prefixColumns are the prefix-cache columns, the last of both tables (analysis.Level
// PrefixCache): the hit rate in [0, 1] and its source (server_counters, usage or
// server_gauge).
var prefixColumns = []string{"prefix_cache_hit_rate", "prefix_cache_source"}

// verdictColumns are the last columns of both tables (appended, never reordered): a level kept
// though imprecise and one whose latency was still rising (analysis.Level Imprecise and
// LatencyRising, DESIGN §3.2), so that a level re-read keeps its verdict and its evidence.
var verdictColumns = []string{"imprecise", "latency_rising"}

// verdictCells are l's cells of verdictColumns.
func verdictCells(l *analysis.Level) []string {
	return []string{strconv.FormatBool(l.Imprecise), strconv.FormatBool(l.LatencyRising)}
}

// csvColumns returns the columns WriteCSV writes, in order. ReadCSV accepts any subset that
// includes concurrency and output_tps.
func csvColumns() []string {
	return slices.Concat(baseColumns(), prefixColumns, verdictColumns)
}

// baseColumns are the columns of csvColumns before the prefix-cache ones.
func baseColumns() []string {
	cols := []string{"concurrency"}
	for _, s := range csvScalars() {
		cols = append(cols, s.name)
	}
	cols = append(cols, "requests", "errors", "valid", "steady")
	for _, m := range csvLatencyMetrics {
		for _, s := range csvLatencyStats {
			cols = append(cols, m+"_"+s+"_ms")
		}
	}
	// Why a level was added after the planned ones (sweep.refine); empty for planned levels.
	cols = append(cols, "refine")
	for _, s := range csvLengths() {
		cols = append(cols, s.name)
	}
	return append(cols, "fixed_output")
}
