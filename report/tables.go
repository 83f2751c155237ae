package report

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

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
	if isRate(res) {
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
			fnum(l.TTFT.P50), fnum(l.TTFT.P95), fnum(l.TTFT.P99), fnum(l.TPOT.P50), fnum(l.TPOT.P95),
			fnum(l.ITL.P99), fnum(l.E2E.P50), fnum(l.E2E.P95), validCell(&l),
		}
		if ttfa {
			row = slices.Insert(row, 10, fnum(l.TTFA.P50), fnum(l.TTFA.P95))
		}
		t.Rows = append(t.Rows, row)
	}
	return withLengths(withPrefixCache(t, res, "TTFT p99 (ms)"), res, "ISL (tokens)", "OSL (tokens)", " ≠ ")
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
	if isRate(res) {
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

func validCell(l *analysis.Level) string {
	switch {
	case l.Superseded:
		return "rerun" // its retry, another row, stands for it
	case l.Valid && l.Imprecise:
		return "yes ±" // kept with the CI it reached (DESIGN §4.1)
	case l.Valid:
		return "yes"
	}
	return "no ✗"
}

// validityTable holds the checks of DESIGN §1 per level; a failed check is marked ✗.
func validityTable(res *analysis.Result) table {
	if isRate(res) {
		return rateValidityTable(res)
	}
	t := table{Header: []string{"concurrency", "achieved concurrency (÷ target, ≥ 95%)", "Little's-law error (≤ 10%)",
		"steady", "client-bound", "E2E ≈ TTFT + TPOT × (N_out − 1)", "QPS ≈ concurrency ÷ mean E2E",
		"output TPS ≈ QPS × mean N_out", "errors by class", "notes"}, Class: "text"}
	for _, l := range sortedLevels(res) {
		c := checksOf(&l)
		t.Rows = append(t.Rows, []string{strconv.Itoa(l.Concurrency), c.Achieved.String(), c.Little.String(),
			c.Steady.String(), c.ClientBound.String(), c.E2EIdentity.String(), c.QPSIdentity.String(),
			c.TPSIdentity.String(), errorClasses(l.ErrorClasses), strings.Join(levelNotes(&l), "; ")})
	}
	return t
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
