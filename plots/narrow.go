package plots

import (
	"fmt"

	"gonum.org/v1/plot/vg"

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
