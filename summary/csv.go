package summary

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// csvLatencyStats are the statistics of a latency column: <metric>_<stat>_ms.
var csvLatencyStats = []string{"mean", "p50", "p90", "p95", "p99"}

// csvLatencyMetrics are the latency metrics of a level, by column prefix.
var csvLatencyMetrics = []string{"ttft", "tpot", "itl", "e2e"}

// csvScalar is a numeric level column and where it lives in analysis.Level.
type csvScalar struct {
	name string
	get  func(*analysis.Level) analysis.Float
	set  func(*analysis.Level, float64)
}

func csvScalars() []csvScalar {
	f := func(name string, p func(*analysis.Level) *analysis.Float) csvScalar {
		return csvScalar{name, func(l *analysis.Level) analysis.Float { return *p(l) }, func(l *analysis.Level, v float64) { *p(l) = analysis.Float(v) }}
	}
	return []csvScalar{
		f("output_tps", func(l *analysis.Level) *analysis.Float { return &l.OutputTPS }),
		f("output_tps_ci95", func(l *analysis.Level) *analysis.Float { return &l.OutputTPSCI95 }),
		f("qps", func(l *analysis.Level) *analysis.Float { return &l.QPS }),
		f("input_tps", func(l *analysis.Level) *analysis.Float { return &l.InputTPS }),
		f("goodput_qps", func(l *analysis.Level) *analysis.Float { return &l.GoodputQPS }),
		f("goodput_tps", func(l *analysis.Level) *analysis.Float { return &l.GoodputTPS }),
		f("achieved_concurrency", func(l *analysis.Level) *analysis.Float { return &l.AchievedConcurrency }),
		f("littles_law_error", func(l *analysis.Level) *analysis.Float { return &l.LittlesLawError }),
		f("mean_output_tokens", func(l *analysis.Level) *analysis.Float { return &l.MeanOutputTokens }),
		f("window_s", func(l *analysis.Level) *analysis.Float { return &l.WindowS }),
		f("error_rate", func(l *analysis.Level) *analysis.Float { return &l.ErrorRate }),
	}
}

// csvLengths are the token-length columns, after refine: input_tokens_ and output_tokens_
// requested, mean, p50 and p95 (analysis.Level InputTokens and OutputTokens); fixed_output
// follows them.
func csvLengths() []csvScalar {
	var out []csvScalar
	for _, q := range []struct {
		name string
		of   func(*analysis.Level) *analysis.TokenLengths
	}{
		{"input_tokens", func(l *analysis.Level) *analysis.TokenLengths { return &l.InputTokens }},
		{"output_tokens", func(l *analysis.Level) *analysis.TokenLengths { return &l.OutputTokens }},
	} {
		for _, st := range []struct {
			name string
			of   func(*analysis.TokenLengths) *analysis.Float
		}{
			{"requested", func(t *analysis.TokenLengths) *analysis.Float { return &t.Requested }},
			{"mean", func(t *analysis.TokenLengths) *analysis.Float { return &t.Mean }},
			{"p50", func(t *analysis.TokenLengths) *analysis.Float { return &t.P50 }},
			{"p95", func(t *analysis.TokenLengths) *analysis.Float { return &t.P95 }},
		} {
			out = append(out, csvScalar{q.name + "_" + st.name,
				func(l *analysis.Level) analysis.Float { return *st.of(q.of(l)) },
				func(l *analysis.Level, v float64) { *st.of(q.of(l)) = analysis.Float(v) }})
		}
	}
	return out
}

// WriteCSV writes levels as a level-summary CSV (DESIGN §4): a header row of csvColumns —
// concurrency, output_tps, qps, the *_ms latency statistics (mean, p50, p90, p95, p99 of
// TTFT, TPOT, ITL and E2E), error_rate, requests and the validity columns — and one row per
// level, then refine (why the level was added after the planned ones; empty for planned
// levels), then the token lengths requested and counted (input_tokens_{requested, mean, p50,
// p95}, output_tokens_…) and fixed_output, then prefix_cache_hit_rate and prefix_cache_source,
// then imprecise and latency_rising (DESIGN §4.13). A value that was not computed is an empty cell.
// Numbers are written in the shortest form that reads back exactly, so WriteCSV then ReadCSV
// round-trips.
//
// Arrival-rate levels (analysis.ModeOf) are written with the columns of rateCSVColumns
// instead: rate_rps in place of concurrency, and the rate columns at the end (realized_rps
// after the prefix-cache ones). When some level has GPU figures (analysis.Level GPU, DESIGN
// §4.16) the GPU columns (gpuColumns) follow every other column of either table; without
// them they are not written, and a run without GPU telemetry keeps its columns. The user
// cancels' columns (cancelColumns) come last, likewise only in a run that cancels.
func WriteCSV(w io.Writer, levels []analysis.Level) error {
	cw := csv.NewWriter(w)
	rate := analysis.ModeOf(levels).IsRate()
	header := csvColumns()
	if rate {
		header = rateCSVColumns()
	}
	gpu, cancels := withGPU(levels), withCancels(levels)
	if gpu {
		header = append(header, gpuColumnNames()...)
	}
	if cancels {
		header = append(header, cancelColumns...)
	}
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	scalars, lengths := csvScalars(), csvLengths()
	for i := range levels {
		if levels[i].Superseded {
			continue // its retry's row stands for the level (DESIGN §3.4)
		}
		row := csvRow(&levels[i], scalars, lengths)
		if rate {
			row = rateRow(&levels[i], row)
		}
		row = append(row, prefixCells(&levels[i])...)
		if rate {
			row = append(row, rateLateCells(&levels[i])...)
		}
		row = append(row, verdictCells(&levels[i])...)
		if gpu {
			row = append(row, gpuCells(&levels[i])...)
		}
		if cancels {
			row = append(row, cancelCells(&levels[i])...)
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("write csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("write csv: %w", err)
	}
	return nil
}

// csvNum formats a cell: the shortest form of f that reads back exactly, "" when not finite.
func csvNum(f analysis.Float) string {
	if !f.OK() {
		return ""
	}
	return strconv.FormatFloat(float64(f), 'g', -1, 64)
}

// csvRow is the row of csvColumns for l.
func csvRow(l *analysis.Level, scalars, lengths []csvScalar) []string {
	row := []string{strconv.Itoa(l.Concurrency)}
	for _, s := range scalars {
		row = append(row, csvNum(s.get(l)))
	}
	row = append(row, strconv.Itoa(l.Requests), strconv.Itoa(l.Errors), strconv.FormatBool(l.Valid), strconv.FormatBool(l.Steady))
	for _, m := range csvLatencyMetrics {
		for _, s := range csvLatencyStats {
			row = append(row, csvNum(*l.LatencyOf(m).Stat(s)))
		}
	}
	row = append(row, l.Refine)
	for _, s := range lengths {
		row = append(row, csvNum(s.get(l)))
	}
	return append(row, strconv.FormatBool(l.FixedOutput))
}

// ReadCSV reads a level-summary CSV (DESIGN §4) named name (used in errors). The first row is
// the header; concurrency (or rate_rps, for arrival-rate levels: rateCSVColumns) and
// output_tps are required, every other column of csvColumns (or rateCSVColumns) and the GPU
// columns (gpuColumns) is optional, and columns may come in any order. Lines starting with # are comments. Empty
// cells are "not measured" (null). Levels are valid and steady unless a valid or steady
// column says false, and their outputs of fixed length when fixed_output says true. Errors
// name name:line and the column: an unknown or repeated column, a
// non-numeric or non-finite cell, a concurrency that is not a positive integer, a negative
// rate, a row with the wrong number of cells, a concurrency on two rows (naming both lines).
func ReadCSV(r io.Reader, name string) ([]analysis.Level, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = false
	h, err := readCSVHeader(cr, name)
	if err != nil {
		return nil, err
	}
	var levels []analysis.Level
	lines := levelLines{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, csvErr(name, err)
		}
		line, _ := cr.FieldPos(0)
		lv, err := h.level(rec, line)
		if err == nil {
			err = lines.add(name, lv, line)
		}
		if err != nil {
			return nil, err
		}
		levels = append(levels, lv)
	}
	if len(levels) == 0 {
		return nil, fmt.Errorf("%s:%d: no level rows after the header", name, h.line)
	}
	return levels, nil
}

// csvHeader is the header row of a level-summary CSV: the column of each cell and where to
// store its value.
type csvHeader struct {
	name    string // the file's name, for errors
	line    int    // the header's line
	cols    []string
	seen    map[string]bool
	setters map[string]func(*analysis.Level, float64)
}

// readCSVHeader reads and checks the header row: every column known, none repeated,
// concurrency and output_tps present.
func readCSVHeader(cr *csv.Reader, name string) (*csvHeader, error) {
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%s: empty file: want a header row with concurrency and output_tps", name)
	}
	if err != nil {
		return nil, csvErr(name, err)
	}
	line, _ := cr.FieldPos(0)
	known := map[string]bool{}
	for _, c := range slices.Concat(csvColumns(), rateOnlyColumns(), gpuColumnNames(), cancelColumns) {
		known[c] = true
	}
	h := &csvHeader{name: name, line: line, cols: make([]string, len(header)), seen: map[string]bool{},
		setters: map[string]func(*analysis.Level, float64){}}
	for i, c := range header {
		c = strings.ToLower(strings.TrimSpace(strings.TrimPrefix(c, "\ufeff")))
		if !known[c] {
			return nil, fmt.Errorf("%s:%d: column %q: unknown column (known: %s)", name, line, c, strings.Join(append(csvColumns(), gpuColumnNames()...), ", "))
		}
		if h.seen[c] {
			return nil, fmt.Errorf("%s:%d: column %q: repeated", name, line, c)
		}
		h.seen[c] = true
		h.cols[i] = c
	}
	if err := h.requireColumns(); err != nil {
		return nil, err
	}
	for _, s := range append(csvScalars(), csvLengths()...) {
		h.setters[s.name] = s.set
	}
	for _, m := range csvLatencyMetrics {
		for _, s := range csvLatencyStats {
			h.setters[m+"_"+s+"_ms"] = func(l *analysis.Level, v float64) { *l.LatencyOf(m).Stat(s) = analysis.Float(v) }
		}
	}
	return h, nil
}

// level parses the row rec on line line into a level. An error rate the row lacks is
// errors ÷ requests when the header has an errors column.
func (h *csvHeader) level(rec []string, line int) (analysis.Level, error) {
	lv := h.newLevel()
	for i, cell := range rec {
		if err := h.cell(&lv, h.cols[i], strings.TrimSpace(cell), line); err != nil {
			return analysis.Level{}, err
		}
	}
	if !lv.ErrorRate.OK() && lv.Requests > 0 && h.seen["errors"] {
		lv.ErrorRate = analysis.Float(float64(lv.Errors) / float64(lv.Requests))
	}
	// mean_output_tokens and output_tokens_mean are one quantity (a file from before the
	// token-length columns has only the first).
	if !lv.OutputTokens.Mean.OK() {
		lv.OutputTokens.Mean = lv.MeanOutputTokens
	} else if !lv.MeanOutputTokens.OK() {
		lv.MeanOutputTokens = lv.OutputTokens.Mean
	}
	return lv, nil
}

// cell stores the (trimmed) cell of column col on line line in lv.
func (h *csvHeader) cell(lv *analysis.Level, col, cell string, line int) error {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%s:%d: column %q: %s", h.name, line, col, fmt.Sprintf(format, args...))
	}
	if ok, err := h.rateCell(lv, col, cell, fail); ok {
		return err
	}
	if ok, err := prefixCell(lv, col, cell, fail); ok {
		return err
	}
	if ok, err := gpuCell(lv, col, cell, fail); ok {
		return err
	}
	if ok, err := cancelCell(lv, col, cell, fail); ok {
		return err
	}
	switch col {
	case "refine":
		lv.Refine = cell
		return nil
	case "valid", "steady", "fixed_output", "imprecise", "latency_rising":
		if cell == "" {
			return nil
		}
		b, err := strconv.ParseBool(cell)
		if err != nil {
			return fail("%q is not true or false", cell)
		}
		switch col {
		case "fixed_output":
			lv.FixedOutput = b
			return nil
		case "imprecise":
			lv.Imprecise = b
			return nil
		case "latency_rising":
			lv.LatencyRising = b
			return nil
		}
		if col == "valid" {
			lv.Valid = b
			if !b {
				lv.Notes = append(lv.Notes, "invalid: marked invalid in "+h.name)
			}
		} else {
			lv.Steady = b
		}
		return nil
	}
	if cell == "" {
		if col == "concurrency" || col == "output_tps" {
			return fail("required value is empty")
		}
		return nil
	}
	v, err := strconv.ParseFloat(cell, 64)
	if err != nil {
		return fail("%q is not a number", cell)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return fail("%q is not finite", cell)
	}
	switch col {
	case "concurrency":
		if v <= 0 || v != math.Trunc(v) || v > math.MaxInt32 {
			return fail("%q: concurrency must be a positive integer", cell)
		}
		lv.Concurrency = int(v)
	case "requests", "errors":
		if v < 0 || v != math.Trunc(v) || v > math.MaxInt32 {
			return fail("%q: must be a non-negative integer", cell)
		}
		if col == "requests" {
			lv.Requests = int(v)
		} else {
			lv.Errors = int(v)
		}
	case "littles_law_error":
		h.setters[col](lv, v)
	default:
		if v < 0 {
			return fail("%q: must not be negative", cell)
		}
		if col == "error_rate" && v > 1 {
			return fail("%q: an error rate is a fraction in [0, 1]", cell)
		}
		h.setters[col](lv, v)
	}
	return nil
}

// levelLines is the line of each concurrency a CSV's rows gave so far.
type levelLines map[int]int

// add records lv's line, or returns an error naming both lines when an earlier row gave the
// same concurrency: one level measured twice, of which the analysis would believe either.
func (s levelLines) add(name string, lv analysis.Level, line int) error {
	if lv.Concurrency == 0 {
		return nil // a row that names its level otherwise
	}
	if first, ok := s[lv.Concurrency]; ok {
		return fmt.Errorf("%s:%d: column \"concurrency\": %d again (first on line %d): one row per level; keep one of the two",
			name, line, lv.Concurrency, first)
	}
	s[lv.Concurrency] = line
	return nil
}

// newLevel returns a level with every measurement null, valid and steady.
func newLevel() analysis.Level {
	n := analysis.NaN()
	return analysis.Level{
		ErrorRate: n, OutputTPS: n, OutputTPSCI95: n, QPS: n, InputTPS: n, GoodputQPS: n, GoodputTPS: n,
		AchievedConcurrency: n, LittlesLawError: n, MeanOutputTokens: n, WindowS: n,
		Steady: true, Valid: true,
		TTFT: analysis.NoLatency(), TPOT: analysis.NoLatency(), ITL: analysis.NoLatency(), E2E: analysis.NoLatency(),
		TTFA: analysis.NoLatency(), InputTokens: analysis.NoTokenLengths(), OutputTokens: analysis.NoTokenLengths(),
		MeanReasoningTokens: n,
	}
}

// csvErr formats an encoding/csv error as name:line: detail.
func csvErr(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		if errors.Is(pe.Err, csv.ErrFieldCount) {
			return fmt.Errorf("%s:%d: row has the wrong number of cells for the header: %w", name, pe.StartLine, pe.Err)
		}
		return fmt.Errorf("%s:%d: column %d: %w", name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}
