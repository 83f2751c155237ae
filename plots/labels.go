package plots

import (
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Point labels ("N=32") are placed when the chart is drawn, on the real data area, by a
// greedy placer: each label in turn takes the first free candidate position around its
// point (the text box measured in the font), free meaning inside the data area and clear of
// every label placed before and every marker; among the free positions at the nearest
// distance the one crossing fewest data lines wins. A label with no free position next to its
// point is led out farther with a thin leader line, and dropped when none is free there
// either (DESIGN §5.1).

// pointLabelSize is the size of the point labels, in points.
const pointLabelSize = 8

// labelGap is the space kept between a label and a marker or another label.
var labelGap = vg.Points(1.5)

// leadOut are the distances from the marker's edge tried in turn; past the first a leader
// line joins the label to its point.
var leadOut = []vg.Length{vg.Points(1.5), vg.Points(12), vg.Points(24)}

// labelPoint is one label to place at the data point (x, y).
type labelPoint struct {
	x, y  float64
	text  string
	color color.Color
}

// placedLabel is a label as drawn, in canvas coordinates.
type placedLabel struct {
	text string
	box  vg.Rectangle
	// at is the point it labels; leader is set when a line joins them.
	at     vg.Point
	leader bool
}

// labelPlacer is the plotter of a chart's point labels, drawn last.
type labelPlacer struct {
	pts   []labelPoint
	marks []mark
	lines []plotter.XYs
	// placed and dropped are the outcome of the last Plot (for tests).
	placed  []placedLabel
	dropped []string
}

// Plot implements plot.Plotter.
func (lp *labelPlacer) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	var marks []vg.Rectangle
	for _, m := range lp.marks {
		if pt := (vg.Point{X: tx(m.x), Y: ty(m.y)}); c.Contains(pt) {
			marks = append(marks, around(pt, m.r+labelGap))
		}
	}
	var segs [][2]vg.Point
	for _, l := range lp.lines {
		for i := 1; i < len(l); i++ {
			segs = append(segs, [2]vg.Point{{X: tx(l[i-1].X), Y: ty(l[i-1].Y)}, {X: tx(l[i].X), Y: ty(l[i].Y)}})
		}
	}
	lp.placed, lp.dropped = nil, nil
	for _, lb := range lp.pts {
		at := vg.Point{X: tx(lb.x), Y: ty(lb.y)}
		sty := sansStyle(pointLabelSize, lb.color)
		sty.XAlign, sty.YAlign = text.XLeft, text.YBottom
		rect := sty.Rectangle(lb.text)
		pl, ok := lp.place(c, at, rect.Size(), marks, segs)
		if !ok || !c.Contains(at) {
			lp.dropped = append(lp.dropped, lb.text)
			continue
		}
		pl.text = lb.text
		lp.placed = append(lp.placed, pl)
		if pl.leader {
			drawLeader(c, at, pl.box, lb.color)
		}
		c.FillText(sty, vg.Point{X: pl.box.Min.X - rect.Min.X, Y: pl.box.Min.Y - rect.Min.Y}, lb.text)
	}
}

// place returns the best free box of size sz for the label of the point at (see the
// package comment at the top of this file).
func (lp *labelPlacer) place(c draw.Canvas, at vg.Point, sz vg.Point, marks []vg.Rectangle, segs [][2]vg.Point) (placedLabel, bool) {
	r := markRadius(at, marks)
	for ring, d := range leadOut {
		best, bestCross := vg.Rectangle{}, math.MaxInt
		for _, box := range candidates(at, sz, r+d) {
			if !within(c.Rectangle, box) || hitsAny(box, marks) || lp.hitsPlaced(box) {
				continue
			}
			if n := crossings(box, segs); n < bestCross {
				best, bestCross = box, n
			}
		}
		if bestCross < math.MaxInt {
			return placedLabel{box: best, at: at, leader: ring > 0}, true
		}
	}
	return placedLabel{}, false
}

// markRadius is the half-size of the marker box around at (the largest, for a point with
// several glyphs), or the gap alone when none is there.
func markRadius(at vg.Point, marks []vg.Rectangle) vg.Length {
	r := labelGap
	for _, m := range marks {
		if m.Min.X <= at.X && at.X <= m.Max.X && m.Min.Y <= at.Y && at.Y <= m.Max.Y {
			r = max(r, at.X-m.Min.X, m.Max.X-at.X, at.Y-m.Min.Y, m.Max.Y-at.Y)
		}
	}
	return r
}

// candidates are the boxes of size sz at distance d from at, in order of preference: above
// left first (curves rising to the right run clear of it), then the other corners, the sides.
func candidates(at, sz vg.Point, d vg.Length) []vg.Rectangle {
	box := func(x, y vg.Length) vg.Rectangle {
		return vg.Rectangle{Min: vg.Point{X: x, Y: y}, Max: vg.Point{X: x + sz.X, Y: y + sz.Y}}
	}
	return []vg.Rectangle{
		box(at.X-d-sz.X, at.Y+d), box(at.X+d, at.Y-d-sz.Y), box(at.X+d, at.Y+d), box(at.X-d-sz.X, at.Y-d-sz.Y),
		box(at.X-d-sz.X, at.Y-sz.Y/2), box(at.X+d, at.Y-sz.Y/2), box(at.X-sz.X/2, at.Y+d), box(at.X-sz.X/2, at.Y-d-sz.Y),
	}
}

func (lp *labelPlacer) hitsPlaced(box vg.Rectangle) bool {
	for _, p := range lp.placed {
		if overlaps(box, grow(p.box, labelGap)) {
			return true
		}
	}
	return false
}

func hitsAny(box vg.Rectangle, rs []vg.Rectangle) bool {
	for _, r := range rs {
		if overlaps(box, r) {
			return true
		}
	}
	return false
}

// overlaps reports whether a and b share interior.
func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

func within(outer, r vg.Rectangle) bool {
	return r.Min.X >= outer.Min.X && r.Max.X <= outer.Max.X && r.Min.Y >= outer.Min.Y && r.Max.Y <= outer.Max.Y
}

func around(pt vg.Point, r vg.Length) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: pt.X - r, Y: pt.Y - r}, Max: vg.Point{X: pt.X + r, Y: pt.Y + r}}
}

func grow(r vg.Rectangle, d vg.Length) vg.Rectangle {
	return vg.Rectangle{Min: vg.Point{X: r.Min.X - d, Y: r.Min.Y - d}, Max: vg.Point{X: r.Max.X + d, Y: r.Max.Y + d}}
}

// crossings counts the segments that pass through box.
func crossings(box vg.Rectangle, segs [][2]vg.Point) int {
	n := 0
	for _, s := range segs {
		if segmentHits(s[0], s[1], box) {
			n++
		}
	}
	return n
}

// segmentHits reports whether the segment a–b passes through r (Liang–Barsky clipping).
func segmentHits(a, b vg.Point, r vg.Rectangle) bool {
	t0, t1 := 0.0, 1.0
	dx, dy := float64(b.X-a.X), float64(b.Y-a.Y)
	for _, e := range [][2]float64{
		{-dx, float64(a.X - r.Min.X)}, {dx, float64(r.Max.X - a.X)},
		{-dy, float64(a.Y - r.Min.Y)}, {dy, float64(r.Max.Y - a.Y)},
	} {
		p, q := e[0], e[1]
		if p == 0 {
			if q < 0 {
				return false
			}
			continue
		}
		t := q / p
		if p < 0 {
			t0 = math.Max(t0, t)
		} else {
			t1 = math.Min(t1, t)
		}
		if t0 > t1 {
			return false
		}
	}
	return true
}

// drawLeader draws a thin line from the edge of the marker at at to the nearest point of box.
func drawLeader(c draw.Canvas, at vg.Point, box vg.Rectangle, col color.Color) {
	end := vg.Point{X: min(max(at.X, box.Min.X), box.Max.X), Y: min(max(at.Y, box.Min.Y), box.Max.Y)}
	dx, dy := float64(end.X-at.X), float64(end.Y-at.Y)
	d := math.Hypot(dx, dy)
	if d == 0 {
		return
	}
	skip := float64(vg.Points(4)) / d
	start := vg.Point{X: at.X + vg.Length(dx*skip), Y: at.Y + vg.Length(dy*skip)}
	c.StrokeLine2(draw.LineStyle{Color: col, Width: vg.Points(0.5)}, start.X, start.Y, end.X, end.Y)
}
