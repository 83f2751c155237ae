package report

import (
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/analysis"
)

// An embeddings run (analysis.Meta.API embeddings, DESIGN §4.17) is measured by the input
// tokens/s its answers embedded and their latency, request to whole answer: its tables and
// sentences name those, and leave out TTFT, TPOT, ITL and output tokens, which it has none of.

// whole reports an embeddings run.
func whole(res *analysis.Result) bool { return res.Whole() }

// throughputWord names the tokens a run's throughput counts: "output", or "input".
func throughputWord(res *analysis.Result) string {
	if whole(res) {
		return "input"
	}
	return "output"
}

// latencyWord names the latency a run's blow-up watches: "TTFT", or "latency".
func latencyWord(res *analysis.Result) string {
	if whole(res) {
		return "latency"
	}
	return "TTFT"
}

// upperFirst returns s with its first letter upper-case (ASCII).
func upperFirst(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}

// The console columns of an embeddings level.
var (
	colInTPS  = consoleColumn{"in tok/s", 8, func(l *analysis.Level) string { return fnum(l.InputTPS) }}
	colInCI   = consoleColumn{"±CI", 5, func(l *analysis.Level) string { return fnum(l.InputTPSCI95) }}
	colInputs = consoleColumn{"inputs/s", 8, func(l *analysis.Level) string { return fnum(l.InputsPerS) }}
	colLat50  = consoleColumn{"lat p50", 7, func(l *analysis.Level) string { return fnum(l.UserE2E().P50) }}
	colLat95  = consoleColumn{"lat p95", 7, func(l *analysis.Level) string { return fnum(l.UserE2E().P95) }}
	colLat99  = consoleColumn{"lat p99", 7, func(l *analysis.Level) string { return fnum(l.UserE2E().P99) }}
)

// WholeAnswers returns t as the table of an embeddings run: input tokens/s (and its CI) in
// place of output tokens/s, inputs/s after it, latency p50, p95 and p99 in place of the E2E
// column, and no TTFT, TPOT or output-length column.
func (t LevelTable) WholeAnswers() LevelTable {
	var out LevelTable
	ci := slices.ContainsFunc(t.cols, func(c consoleColumn) bool { return c.head == colCI.head })
	for _, c := range t.cols {
		switch c.head {
		case colTPS.head:
			out.cols = append(out.cols, colInTPS)
			if !ci {
				out.cols = append(out.cols, colInputs)
			}
		case colCI.head:
			out.cols = append(out.cols, colInCI, colInputs)
		case colE2E95.head:
			out.cols = append(out.cols, colLat50, colLat95, colLat99)
		case colTTFT50.head, colTTFT95.head, colTPOT95.head, colCTTFT50.head, colOSL.head:
		default:
			out.cols = append(out.cols, c)
		}
	}
	for _, c := range out.cols {
		out.widths = append(out.widths, max(c.width, len([]rune(c.head))))
	}
	return out
}

// wholeConsoleNote explains the columns of an embeddings run's level table.
const wholeConsoleNote = "in tok/s = input tokens/s embedded ±95% CI; inputs/s = inputs embedded/s; err = error rate; QPS = requests/s; lat = latency, the request to its whole answer, ms"

// wholeLevelTable is the level table of an embeddings run in report.md and report.html.
func wholeLevelTable(res *analysis.Result) table {
	t := table{Header: []string{keyHeader(res), "requests", "errors", "input TPS (tokens/s)", "±95% CI (tokens/s)",
		"inputs/s", "QPS (req/s)", "goodput (req/s)", "latency p50 (ms)", "latency p95 (ms)", "latency p99 (ms)", "valid"}}
	for _, l := range rowLevels(res) {
		key := concurrencyCell(&l)
		if l.IsRate() {
			key = rateKey(&l)
		}
		e2e := l.UserE2E()
		t.Rows = append(t.Rows, []string{key, strconv.Itoa(l.Requests), errorsCell(&l),
			fnum(l.InputTPS), fnum(l.InputTPSCI95), fnum(l.InputsPerS), fnum(l.QPS), fnum(l.GoodputQPS),
			fnum(e2e.P50), fnum(e2e.P95), fnum(e2e.P99), validCell(&l)})
	}
	return t
}

// wholeMethodNotes are the definitions of an embeddings run's own quantities, in place of
// the stream's (streamQuantities).
var wholeMethodNotes = [][2]string{
	{"latency", "t(the whole answer's last byte) − t_send: an embeddings answer is one JSON body"},
	{"input TPS", "usage.prompt_tokens (else the tokens the workload sized) of the answers that arrived inside the window [W0, W1) ÷ (W1 − W0)"},
	{"inputs/s", "the inputs of the requests completed inside the window ÷ (W1 − W0)"},
	{"latency blow-up", "flat-then-linear hinge on (concurrency, latency p50), as the TTFT blow-up of a stream"},
}

// streamQuantities are the method rows of a token stream that an embeddings run has not.
var streamQuantities = []string{"TTFT", "E2E", "N_out", "TPOT", "ITL", "output TPS", "TTFT blow-up"}

// wholeMethodRows returns rows, a stream's method rows, for an embeddings run: its own
// quantities first, without the stream's.
func wholeMethodRows(rows [][]string) [][]string {
	out := make([][]string, 0, len(rows))
	for _, m := range wholeMethodNotes {
		out = append(out, []string{m[0], m[1]})
	}
	for _, r := range rows {
		if !slices.Contains(streamQuantities, r[0]) {
			out = append(out, r)
		}
	}
	return out
}
