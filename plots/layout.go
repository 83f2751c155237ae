package plots

import (
	"strings"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The layout of a chart's texts at any size: a title line or a legend entry too wide for its
// chart breaks onto lines of its own rather than being cropped at the image's edges.

// titleSep joins the parts of a subtitle (model · endpoint · date); a title line too wide for
// its chart breaks there.
const titleSep = " · "

// wrapTitle breaks every line of a title that is wider than w in style sty at titleSep,
// putting on each line as many parts as fit (at least one). Lines that fit are kept, so a
// chart at its default size draws the title it always did; a narrow one keeps its subtitle
// inside the image rather than cropped at both edges.
func wrapTitle(title string, sty text.Style, w vg.Length) string {
	lines := strings.Split(title, "\n")
	var out []string
	for _, line := range lines {
		if sty.Width(line) <= w {
			out = append(out, line)
			continue
		}
		out = append(out, joinFitting(strings.Split(line, titleSep), titleSep, sty, w)...)
	}
	return strings.Join(out, "\n")
}

// fitTitle breaks the lines of f's title that are wider than c (wrapTitle) until the returned
// function restores it: a narrow rendering keeps its subtitle inside the image.
func (f *Figure) fitTitle(c draw.Canvas) (restore func()) {
	t := f.p.Title.Text
	f.p.Title.Text = wrapTitle(t, f.p.Title.TextStyle, c.Size().X-2*f.p.Title.Padding)
	return func() { f.p.Title.Text = t }
}

// wrapEntries breaks the name of every entry wider than w in style sty at spaces: the entry
// keeps its thumbnails and the first line, and each further line is an entry without a
// thumbnail, so the legend of a narrow chart stays inside it. A word wider than w stays whole.
func wrapEntries(entries []legendEntry, sty text.Style, w vg.Length) []legendEntry {
	var out []legendEntry
	for _, e := range entries {
		if sty.Width(e.name) <= w {
			out = append(out, e)
			continue
		}
		thumbs := e.thumbs
		for _, line := range joinFitting(strings.Fields(e.name), " ", sty, w) {
			out = append(out, legendEntry{name: line, thumbs: thumbs})
			thumbs = nil
		}
	}
	return out
}

// joinFitting joins parts with sep into lines no wider than w in sty, as many parts a line
// as fit (at least one).
func joinFitting(parts []string, sep string, sty text.Style, w vg.Length) []string {
	var lines []string
	cur := ""
	for _, part := range parts {
		switch {
		case cur == "":
			cur = part
		case sty.Width(cur+sep+part) <= w:
			cur += sep + part
		default:
			lines = append(lines, cur)
			cur = part
		}
	}
	return append(lines, cur)
}
