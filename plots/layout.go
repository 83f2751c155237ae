package plots

import (
	"strings"

	"gonum.org/v1/plot"
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
// putting on each line as many parts as fit, a part wider than w itself broken (joinFitting). Lines that fit are kept, so a
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

// fitted returns a copy of f's plot whose title lines wider than c are broken (wrapTitle), for
// drawing f in c: a narrow rendering keeps its subtitle inside the image. f itself is left as
// it is, so drawing it at one size changes nothing of another.
func (f *Figure) fitted(c draw.Canvas) *plot.Plot {
	p := *f.p
	p.Title.Text = wrapTitle(p.Title.Text, p.Title.TextStyle, c.Size().X-2*p.Title.Padding)
	return &p
}

// wrapEntries breaks the name of every entry wider than w in style sty at spaces, a word wider
// than w itself broken (joinFitting): the entry keeps its thumbnails and the first line, and
// each further line is an entry without a thumbnail, so the legend of a narrow chart stays
// inside it.
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

// breakAfter are the characters a part too wide for its line breaks after: those of a model
// name ("org/Model-3.1-70B"), a URL and a time.
const breakAfter = "/-:"

// joinFitting joins parts with sep into lines no wider than w in sty, as many parts a line as
// fit. A part wider than w breaks after the characters of breakAfter, as many pieces a line as
// fit, and a piece still wider between its characters: no line is wider than w unless one
// character is, and joining the pieces of a part gives it back.
func joinFitting(parts []string, sep string, sty text.Style, w vg.Length) []string {
	var lines []string
	cur := ""
	for _, part := range parts {
		glue := sep
		for _, piece := range pieces(part, sty, w) {
			switch {
			case cur == "":
				cur = piece
			case sty.Width(cur+glue+piece) <= w:
				cur += glue + piece
			default:
				lines = append(lines, cur)
				cur = piece
			}
			glue = ""
		}
	}
	return append(lines, cur)
}

// pieces returns part whole when it fits w in sty; else part cut after each character of
// breakAfter, a piece still wider than w cut into its characters.
func pieces(part string, sty text.Style, w vg.Length) []string {
	if sty.Width(part) <= w {
		return []string{part}
	}
	var out []string
	for rest := part; rest != ""; {
		n := len(rest)
		if i := strings.IndexAny(rest, breakAfter); i >= 0 {
			n = i + 1
		}
		piece := rest[:n]
		rest = rest[n:]
		if sty.Width(piece) <= w {
			out = append(out, piece)
			continue
		}
		for _, r := range piece {
			out = append(out, string(r))
		}
	}
	return out
}
