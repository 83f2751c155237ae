package plots

import (
	"fmt"
	"strings"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// NarrowWidth and NarrowHeight are the size of a chart's narrow rendering, the one report.html
// shows on a phone (DESIGN §5.2): 4 × 5.5 in. Scaled to a 358 px column (a 390 px viewport) it
// is drawn at 1.24 px a point, so its 8 pt point labels are 9.9 px where the 7 in rendering's
// would be 5.7 px; the legend takes one column and the data area stays about as tall as wide.
const (
	NarrowWidth  = 4 * vg.Inch
	NarrowHeight = 5.5 * vg.Inch
)

// narrowSize returns the size of the narrow rendering of the chart called name: the
// efficiency chart's two panels keep their height ratio to a single chart's.
func narrowSize(name string) (w, h vg.Length) {
	if name == efficiencyName {
		return NarrowWidth, NarrowHeight * efficiencyHeight / Height
	}
	return NarrowWidth, NarrowHeight
}

// RenderNarrow renders the charts report.html inlines for res — those of RenderAll except the
// dashboard — as SVG at their narrow size (NarrowWidth × NarrowHeight), in RenderAll's order.
// Each File is named as the chart, Format "svg". It writes no file: these renderings live in
// report.html only.
func RenderNarrow(res *analysis.Result) ([]File, error) {
	var files []File
	for _, name := range chartsOf(res) {
		if name == "dashboard" {
			continue
		}
		f, err := renderNarrow(name, func() (Chart, error) { return Build(name, res) })
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// RenderCompareNarrow renders the overlay charts of RenderCompare as SVG at NarrowWidth ×
// NarrowHeight, for compare.html on a phone; it writes no file.
func RenderCompareNarrow(runs []*analysis.Result, labels []string) ([]File, error) {
	var files []File
	for _, name := range compareNames() {
		f, err := renderNarrow(name, func() (Chart, error) { return compareBuild(name)(runs, labels) })
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return files, nil
}

// RenderParetoNarrow renders the Pareto chart of RenderPareto as SVG at NarrowWidth ×
// NarrowHeight, for a grid's report.html on a phone; it writes no file.
func RenderParetoNarrow(runs []*analysis.Result, labels []string, gpus int) (File, error) {
	return renderNarrow(ParetoName, func() (Chart, error) { return pareto(runs, labels, gpus) })
}

// renderNarrow builds the chart called name and renders it as SVG at its narrow size. An
// error building it is build's; one rendering it names the chart ("plots: NAME: …").
func renderNarrow(name string, build func() (Chart, error)) (File, error) {
	c, err := build()
	if err != nil {
		return File{}, err
	}
	w, h := narrowSize(name)
	b, err := Render(c, w, h, "svg")
	if err != nil {
		return File{}, fmt.Errorf("plots: %s: %w", name, err)
	}
	return File{Name: name, Format: "svg", Data: b}, nil
}

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
