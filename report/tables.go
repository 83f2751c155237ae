package report

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/analysis"
)

// table is a header and rows of formatted cells.
type table struct {
	Header []string
	Rows   [][]string
	// Class is the HTML class of the table ("text" left-aligns every cell).
	Class string
}

// levelTable is the full level table of report.md and report.html, units in the header.
func levelTable(res *analysis.Result) table {
	if whole(res) {
		return wholeLevelTable(res)
	}
	if res.Mode.IsRate() {
		return rateLevelTable(res)
	}
	t := table{Header: []string{"concurrency", "requests", "errors", "output TPS (tokens/s)", "±95% CI (tokens/s)",
		"QPS (req/s)", "goodput (req/s)", "TTFT p50 (ms)", "TTFT p95 (ms)", "TTFT p99 (ms)", "TPOT p50 (ms)", "TPOT p95 (ms)",
		"ITL p99 (ms)", "E2E p50 (ms)", "E2E p95 (ms)", "valid"}}
	// TTFT counts reasoning content; the time to the first answer token follows it when some
	// request reasoned first.
	ttfa := reasoned(res)
	if ttfa {
		t.Header = slices.Insert(t.Header, 10, "TTFA p50 (ms)", "TTFA p95 (ms)")
	}
	for _, l := range sortedLevels(res) {
		row := []string{
			concurrencyCell(&l), strconv.Itoa(l.Requests), errorsCell(&l),
			fnum(l.OutputTPS), fnum(l.OutputTPSCI95), fnum(l.QPS), fnum(l.GoodputQPS),
			ttftCell(&l, l.TTFT.P50), ttftCell(&l, l.TTFT.P95), ttftCell(&l, l.TTFT.P99), fnum(l.TPOT.P50), fnum(l.TPOT.P95),
			fnum(l.ITL.P99), fnum(l.E2E.P50), fnum(l.E2E.P95), validCell(&l),
		}
		if ttfa {
			row = slices.Insert(row, 10, fnum(l.TTFA.P50), fnum(l.TTFA.P95))
		}
		t.Rows = append(t.Rows, row)
	}
	return withCancelled(withEnergy(withLengths(withPrefixCache(t, res, "TTFT p99 (ms)"), res, "ISL (tokens)", "OSL (tokens)", " ≠ "), res), res)
}

// rowLevels returns the levels of res in the order of its level table's rows: sortedLevels,
// only the arrival-rate levels on an arrival-rate run.
func rowLevels(res *analysis.Result) []analysis.Level {
	levels := sortedLevels(res)
	if res.Mode.IsRate() {
		levels = slices.DeleteFunc(levels, func(l analysis.Level) bool { return !l.IsRate() })
	}
	return levels
}

// reasoned reports whether some level's requests reasoned before they answered: its TTFA
// (time to first answer token) was measured apart from TTFT.
func reasoned(res *analysis.Result) bool {
	for i := range res.Levels {
		if res.Levels[i].TTFA.P50.OK() {
			return true
		}
	}
	return false
}

// errorsCell shows the failed requests and their rate; a table that reports only the rate
// (a level-summary CSV with error_rate but no errors column) shows the rate, never "0".
func errorsCell(l *analysis.Level) string {
	switch {
	case l.Errors > 0:
		return fmt.Sprintf("%d (%s)", l.Errors, fpct(l.ErrorRate))
	case l.ErrorRate.OK() && l.ErrorRate > 0:
		return fpct(l.ErrorRate)
	}
	return "0"
}

// concurrencyCell marks a level the sweep added after its planned ones (sweep.refine).
func concurrencyCell(l *analysis.Level) string {
	if l.Refine != "" {
		return strconv.Itoa(l.Concurrency) + " (added)"
	}
	return strconv.Itoa(l.Concurrency)
}

// keyHeader is the header of the column that names the levels: "concurrency", or "offered
// (req/s)" on an arrival-rate run.
func keyHeader(res *analysis.Result) string {
	if res.Mode.IsRate() {
		return "offered (req/s)"
	}
	return "concurrency"
}

// levelNotes are a level's notes, with why it was added first.
func levelNotes(l *analysis.Level) []string {
	if l.Refine == "" {
		return l.Notes
	}
	return append([]string{"added after the planned levels: " + l.Refine}, l.Notes...)
}

// hasServer reports whether some level carries server metrics.
func hasServer(res *analysis.Result) bool {
	for i := range res.Levels {
		if res.Levels[i].Server != nil {
			return true
		}
	}
	return false
}

// serverNote says where the server-metrics table comes from.
const serverNote = "From the server's /metrics (vLLM, SGLang or llama.cpp series), scraped every server_metrics.interval and averaged over the level's measurement window: mean running, max running and mean waiting are requests; max KV usage is the largest KV-cache usage scraped; preemptions is the increase of the preemption counter over the window. “—”: the server does not expose that series, or no scrape fell inside the level's window."

// serverTable holds the per-level server metrics (levels[].server of analysis.json); a level
// without them shows dashes.
func serverTable(res *analysis.Result) table {
	t := table{Header: []string{keyHeader(res), "mean running (requests)", "max running (requests)", "mean waiting (requests)", "max KV usage", "preemptions"}}
	for _, l := range sortedLevels(res) {
		row := []string{levelKey(&l), dash, dash, dash, dash, dash}
		if s := l.Server; s != nil {
			row[1], row[2], row[3] = fnum(s.MeanRunning), fint(s.MaxRunning), fnum(s.MeanWaiting)
			row[4], row[5] = fpct(s.MaxKVUsage), fint(s.Preemptions)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// rateKey is a rate level's first table cell: its offered rate, with a trace replay's time
// scale ("40.0 (2× trace)"), marked when added.
func rateKey(l *analysis.Level) string {
	k := frate(l.Offered())
	if l.TimeScale > 0 {
		k += " (" + strconv.FormatFloat(float64(l.TimeScale), 'g', 3, 64) + "× trace)"
	}
	if l.Refine != "" {
		k += " (added)"
	}
	return k
}

// levelKey names a level in the first cell of the lengths and server tables: its
// concurrency, or its offered rate on an arrival-rate level.
func levelKey(l *analysis.Level) string {
	if l.IsRate() {
		return frate(l.Offered())
	}
	return strconv.Itoa(l.Concurrency)
}

// sustainableCell shows the verdict and the backlog growth: "yes (−0.04)", "no (+3.02)".
func sustainableCell(l *analysis.Level) string {
	v := "yes"
	if !l.Sustainable {
		v = "no"
	}
	if g := l.BacklogGrowthRPS; g.OK() {
		return fmt.Sprintf("%s (%s)", v, signed(g))
	}
	return v
}

// signed formats v with its sign: "+3.02", "−0.04".
func signed(v analysis.Float) string {
	if v < 0 {
		return "−" + fnum(-v)
	}
	return "+" + fnum(v)
}

// rateLevelTable is the full level table of an arrival-rate run, units in the header.
func rateLevelTable(res *analysis.Result) table {
	t := table{Header: []string{"offered (req/s)", "realised (req/s)", "achieved (req/s)", "completed (req/s)", "sustainable (backlog growth, req/s)",
		"requests", "errors", "output TPS (tokens/s)", "TTFT p50 (ms)", "TTFT p95 (ms)", "TTFT p99 (ms)", "TTFT p95 from send (ms)",
		"TPOT p95 (ms)", "E2E p50 (ms)", "E2E p95 (ms)", "lag p50 (ms)", "lag p99 (ms)", "valid"}}
	for _, l := range sortedLevels(res) {
		if !l.IsRate() {
			continue
		}
		ttft, e2e := l.UserTTFT(), l.UserE2E()
		t.Rows = append(t.Rows, []string{rateKey(&l), frate(l.RealizedRPS), frate(l.AchievedRPS), frate(l.CompletionRate()), sustainableCell(&l),
			strconv.Itoa(l.Requests), errorsCell(&l), fnum(l.OutputTPS), ttftCell(&l, ttft.P50), ttftCell(&l, ttft.P95), ttftCell(&l, ttft.P99), ttftCell(&l, l.TTFT.P95),
			fnum(l.TPOT.P95), fnum(e2e.P50), fnum(e2e.P95), fnum(l.ScheduleLag.P50), fnum(l.ScheduleLag.P99), validCell(&l)})
	}
	return withCancelled(withEnergy(withLengths(withPrefixCache(t, res, "TTFT p99 (ms)"), res, "ISL (tokens)", "OSL (tokens)", " ≠ "), res), res)
}

// rateLevelsNote is the note under the level table of an arrival-rate run.
const rateLevelsNote = "Realised = the window's arrivals ÷ its length, the rate the schedule's draw offered the server: each level is placed and judged there (the offered rate where a table has none); latencies are over the window's arrivals (the requests scheduled inside the measurement window, whenever they were sent); TTFT and E2E from the scheduled arrival (the user's view) where the level has them, TTFT p95 from send beside them; completed = output TPS ÷ mean output tokens (QPS without them), the completion rate the capacity is read from; “—” marks a value that could not be computed; ✗ marks a level excluded from the analysis."

// completedAt returns the completion rate of the level placed at rps requests/s
// (Level.ArrivalRate; NaN when none).
func completedAt(levels []analysis.Level, rps analysis.Float) analysis.Float {
	for i := range levels {
		if levels[i].IsRate() && levels[i].ArrivalRate() == rps {
			return levels[i].CompletionRate()
		}
	}
	return analysis.NaN()
}
