package report

import (
	"strconv"
	"strings"

	"github.com/rivo/uniseg"

	"github.com/kneecap/kneecap/analysis"
)

// consoleColumn is a column of the console's level table: its header, the width it keeps
// (cells are right-aligned in it; a longer cell widens the column of the final table and
// overflows a live row) and its cell.
type consoleColumn struct {
	head  string
	width int
	cell  func(l *analysis.Level) string
}

// The columns of the console's level tables. The default sets fit 80 columns with the
// two-space indent (72 and 74 characters with every column at its width); --wide shows all.
var (
	colN      = consoleColumn{"N", 4, keyCell}
	colReq    = consoleColumn{"req", 5, func(l *analysis.Level) string { return strconv.Itoa(l.Requests) }}
	colErrPct = consoleColumn{"err", 6, errRateCell}
	colErrs   = consoleColumn{"err", 6, errorsCell}
	colTPS    = consoleColumn{"tok/s", 6, func(l *analysis.Level) string { return fnum(l.OutputTPS) }}
	colCI     = consoleColumn{"±CI", 5, func(l *analysis.Level) string { return fnum(l.OutputTPSCI95) }}
	colQPS    = consoleColumn{"QPS", 5, func(l *analysis.Level) string { return fnum(l.QPS) }}
	colTTFT50 = consoleColumn{"TTFT p50", 8, func(l *analysis.Level) string { return fnum(l.TTFT.P50) }}
	colTTFT95 = consoleColumn{"TTFT p95", 8, func(l *analysis.Level) string { return ttftCell(l, l.TTFT.P95) }}
	colTPOT95 = consoleColumn{"TPOT p95", 8, func(l *analysis.Level) string { return fnum(l.TPOT.P95) }}
	colE2E95  = consoleColumn{"E2E p95", 7, func(l *analysis.Level) string { return fnum(l.E2E.P95) }}
	colISL    = consoleColumn{"ISL", 4, func(l *analysis.Level) string { p, _ := l.LengthsOff(); return lengthCell(l.InputTokens, p, "≠") }}
	colOSL    = consoleColumn{"OSL", 4, func(l *analysis.Level) string { _, o := l.LengthsOff(); return lengthCell(l.OutputTokens, o, "≠") }}
	colValid  = consoleColumn{"valid", 5, validCell}

	colRate     = consoleColumn{"req/s", 6, keyCell}
	colReal     = consoleColumn{"real", 6, func(l *analysis.Level) string { return frate(l.RealizedRPS) }}
	colAch      = consoleColumn{"ach", 6, func(l *analysis.Level) string { return frate(l.AchievedRPS) }}
	colDone     = consoleColumn{"done", 6, func(l *analysis.Level) string { return frate(l.CompletionRate()) }}
	colSust     = consoleColumn{"sust", 4, sustCell}
	colSustWide = consoleColumn{"sust", 11, sustainableCell}
	colUTTFT50  = consoleColumn{"TTFT p50", 8, func(l *analysis.Level) string { return fnum(l.UserTTFT().P50) }}
	colUTTFT95  = consoleColumn{"TTFT p95", 8, func(l *analysis.Level) string { return ttftCell(l, l.UserTTFT().P95) }}
	colUE2E95   = consoleColumn{"E2E p95", 7, func(l *analysis.Level) string { return fnum(l.UserE2E().P95) }}
	colLag      = consoleColumn{"lag p99", 7, func(l *analysis.Level) string { return fnum(l.ScheduleLag.P99) }}
	// colReadLag is the client's read-lag p99 in ms (DESIGN §3.3), "-" without timestamps.
	colReadLag = consoleColumn{"read lag p99", 12, readLagCell}
	// colCTTFT50 is TTFT p50 on the client's clock when the level's latencies are on the
	// kernel's (DESIGN §3.3): the difference is what the client's read lag would have added.
	colCTTFT50 = consoleColumn{"cTTFT p50", 9, clientTTFTCell}
)

// clientTTFTCell is the level's TTFT p50 on the client's clock, in ms, "-" when its latencies
// are not on the kernel's (TTFT p50 is then the client's).
func clientTTFTCell(l *analysis.Level) string {
	if l.TTFTClient == nil {
		return "-"
	}
	return fnum(l.TTFTClient.P50)
}

// readLagCell is the level's read-lag p99 in ms, "-" when unknown.
func readLagCell(l *analysis.Level) string {
	if l.ReadLag == nil {
		return "-"
	}
	return fnum(analysis.Float(l.ReadLag.P99MS))
}

// consoleColumns returns the level table's columns: for an arrival-rate run or a closed-loop
// one, every column (wide) or the default set, with ISL and OSL (wide only) when lengths.
func consoleColumns(rate, wide, lengths bool) []consoleColumn {
	switch {
	case rate && !wide:
		return []consoleColumn{colRate, colDone, colSust, colErrPct, colTPS, colUTTFT95, colUE2E95, colLag, colValid}
	case !wide:
		return []consoleColumn{colN, colReq, colErrPct, colTPS, colQPS, colTTFT95, colTPOT95, colE2E95, colValid}
	}
	var cols []consoleColumn
	if rate {
		cols = []consoleColumn{colRate, colReal, colAch, colDone, colSustWide, colReq, colErrs, colTPS, colUTTFT50, colUTTFT95, colUE2E95, colLag, colReadLag}
	} else {
		cols = []consoleColumn{colN, colReq, colErrs, colTPS, colCI, colQPS, colTTFT50, colCTTFT50, colTTFT95, colTPOT95, colE2E95, colReadLag}
	}
	if lengths {
		cols = append(cols, colISL, colOSL)
	}
	return append(cols, colValid)
}

// keyCell names a level: its concurrency or offered rate (with a trace replay's time scale:
// "15.6 2×"), "+" when the sweep added it after its planned levels (sweep.refine).
func keyCell(l *analysis.Level) string {
	k := strconv.Itoa(l.Concurrency)
	if l.IsRate() {
		k = frate(l.Offered())
	}
	if l.IsRate() && l.TimeScale > 0 {
		k += " " + strconv.FormatFloat(float64(l.TimeScale), 'g', 3, 64) + "×"
	}
	if l.Refine != "" {
		k += "+"
	}
	return k
}

// errRateCell is the error rate alone: "0", or "1.2%".
func errRateCell(l *analysis.Level) string {
	if l.Errors == 0 && (!l.ErrorRate.OK() || l.ErrorRate == 0) {
		return "0"
	}
	return fpct(l.ErrorRate)
}

// sustCell is the sustainability verdict alone: "yes" or "no".
func sustCell(l *analysis.Level) string {
	if l.Sustainable {
		return "yes"
	}
	return "no"
}

// LevelTable is the console's level table: the columns Console prints and the sweep's live
// table prints one row at a time as each level ends, so the two show the same columns in the
// same widths. Its zero value has no columns.
type LevelTable struct {
	cols   []consoleColumn
	widths []int
	// width is the terminal's width the lines are kept within (Fit); 0: no limit.
	width int
}

// Fit returns t with its lines kept within a terminal of width columns (0: no limit, a file or
// a pipe): a row too long goes on in continuation lines, indented past the key column, each
// holding whole columns, in the same places for the header and every row, so no cell is cut
// and each stays under its header. Call it after the columns are chosen.
func (t LevelTable) Fit(width int) LevelTable {
	t.width = width
	return t
}

// NewLevelTable returns the level table of an arrival-rate run (rate) or a closed-loop one:
// every column when wide, else the default set that fits 80 columns; lengths adds ISL and OSL
// to the wide set.
func NewLevelTable(rate, wide, lengths bool) LevelTable {
	t := LevelTable{cols: consoleColumns(rate, wide, lengths)}
	for _, c := range t.cols {
		t.widths = append(t.widths, max(c.width, displayWidth(c.head)))
	}
	return t
}

// consoleTable is the console summary's level table of res, whose levels are levels: the
// columns of o.Wide (with the prefix-cache and energy columns where the run has them), each
// as wide as its widest cell, within o.Width.
func consoleTable(res *analysis.Result, levels []analysis.Level, o ConsoleOptions) LevelTable {
	t := NewLevelTable(res.Mode.IsRate(), o.Wide, hasLengths(res))
	if whole(res) {
		t = t.WholeAnswers()
	}
	if consoleHit(res, o.Wide) {
		t = t.WithPrefixCache()
	}
	if consoleEnergy(res, o.Wide) {
		t = t.WithEnergy()
	}
	t.fit(levels)
	return t.Fit(o.Width)
}

// fit widens the columns to the cells of levels (the final table knows them all).
func (t LevelTable) fit(levels []analysis.Level) {
	for i := range levels {
		for j, c := range t.cols {
			t.widths[j] = max(t.widths[j], displayWidth(c.cell(&levels[i])))
		}
	}
}

// Header is the table's header line, with its newline.
func (t LevelTable) Header() string {
	cells := make([]string, len(t.cols))
	for i, c := range t.cols {
		cells[i] = c.head
	}
	return t.line(cells)
}

// Row is level l's line, with its newline.
func (t LevelTable) Row(l *analysis.Level) string {
	cells := make([]string, len(t.cols))
	for i, c := range t.cols {
		cells[i] = c.cell(l)
	}
	return t.line(cells)
}

// line right-aligns cells in the columns, two spaces apart after a two-space indent, within
// t.width (columnLines).
func (t LevelTable) line(cells []string) string {
	return columnLines(cells, t.widths, 0, t.width)
}

// columnLines lays out cells in columns of widths, two spaces apart after a two-space indent,
// right-aligned (the first left ones left-aligned), ending in a newline; widths and cells are
// in terminal columns (displayWidth), so a wide character counts two. Within width columns
// (0: no limit) a line that would pass it goes on in continuation lines indented past the
// first column (or by two spaces alone where a column would not fit after that indent), each
// holding whole columns (one at least). Where a column goes depends on widths alone while each
// cell fits its column, so a header and its rows break alike; a cell longer than its column is
// never cut, only longer, and breaks the line by its own width, so no line passes width but a
// single column that cannot fit on any.
func columnLines(cells []string, widths []int, left, width int) string {
	var b strings.Builder
	pos, onLine := 0, 0 // the line's length in columns and its columns
	for i, s := range cells {
		sw := displayWidth(s)
		w := max(widths[i], sw)
		if width > 0 && onLine > 0 && pos+2+w > width {
			b.WriteByte('\n')
			pos, onLine = 2+widths[0], 0
			if pos+2+w > width {
				pos = 0
			}
			b.WriteString(strings.Repeat(" ", pos))
		}
		pad := strings.Repeat(" ", w-sw)
		b.WriteString("  ")
		if i < left {
			b.WriteString(s + pad)
		} else {
			b.WriteString(pad + s)
		}
		pos += 2 + w
		onLine++
	}
	b.WriteByte('\n')
	return b.String()
}

// displayWidth is the number of terminal columns s takes: two for a wide (East Asian)
// character, none for a combining mark, one for the rest.
func displayWidth(s string) int {
	return uniseg.StringWidth(s)
}
