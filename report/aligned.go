package report

import (
	"fmt"
	"io"
	"strings"
)

// writeAligned writes t's header and rows for a terminal, one line each: the cells
// left-aligned in columns two spaces apart, each column as wide as its widest cell in terminal
// columns (displayWidth, so a run label in CJK characters keeps the columns after it in
// place), the last cell of a line unpadded. It lays out what text/tabwriter would, which
// counts runes, not columns. what names the table in an error.
func writeAligned(w io.Writer, t table, what string) error {
	lines := append([][]string{t.Header}, t.Rows...)
	var widths []int
	for _, cells := range lines {
		for i, c := range cells[:max(len(cells)-1, 0)] {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], displayWidth(c))
		}
	}
	var b strings.Builder
	for _, cells := range lines {
		for i, c := range cells {
			b.WriteString(c)
			if i < len(cells)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-displayWidth(c)+2))
			}
		}
		b.WriteByte('\n')
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("report: %s: %w", what, err)
	}
	return nil
}
