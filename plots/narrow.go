package plots

import "gonum.org/v1/plot/vg"

// NarrowWidth and NarrowHeight are the size of a chart's narrow rendering, the one report.html
// shows on a phone (DESIGN §5.2): 4 × 5.5 in. Scaled to a 343 px column (a 390 px viewport less
// a 15 px scrollbar) it is drawn at 1.19 px a point, so its 8 pt point labels are 9.5 px (9.9 px
// without a scrollbar, as on a phone) where the 7 in rendering's would be 5.4 px; the legend
// takes one column and the data area stays about as tall as wide.
const (
	NarrowWidth  = 4 * vg.Inch
	NarrowHeight = 5.5 * vg.Inch
)

// narrowSize returns the size of the narrow rendering of the chart called name: the
// efficiency chart's two panels keep their height ratio to a single chart's. renderFormats
// draws every chart but the dashboard at it too.
func narrowSize(name string) (w, h vg.Length) {
	if name == efficiencyName {
		return NarrowWidth, NarrowHeight * efficiencyHeight / Height
	}
	return NarrowWidth, NarrowHeight
}
