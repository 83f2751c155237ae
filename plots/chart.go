package plots

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	// Register the PNG and SVG back ends with draw.NewFormattedCanvas.
	_ "gonum.org/v1/plot/vg/vgimg"
	_ "gonum.org/v1/plot/vg/vgsvg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/server"
)

// Chart is anything that renders itself as an image of w × h in a format "png" or "svg":
// a *plot.Plot, or the Grid of the dashboard.
type Chart interface {
	WriterTo(w, h vg.Length, format string) (io.WriterTo, error)
}

// Default sizes of the charts RenderAll renders. Charts are laid out for these sizes: the legend
// is kept clear of the data assuming a data area of about this size.
const (
	// Width and Height are the size of a single chart (7 × 5 in: 672 × 480 pt at 96 dpi,
	// the PNG 1344 × 960 px at PNGDPI).
	Width  = 7 * vg.Inch
	Height = 5 * vg.Inch
	// dashboardWidth and dashboardHeight are the size of the 2×2 dashboard.
	dashboardWidth  = 2 * Width
	dashboardHeight = 2 * Height
)

// Colours, from the Tableau 10 palette (colour-blind friendlier than pure primaries).
var (
	colBlue   = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colOrange = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colGreen  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	colRed    = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colPurple = color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	colBrown  = color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
	colGray   = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colShade  = color.NRGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0x40}
	colGrid   = color.Gray{Y: 0xdd}
)

// runColors colours the runs of a comparison, in order.
var runColors = []color.Color{colBlue, colOrange, colGreen, colRed, colPurple, colBrown, colGray,
	color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff},
	color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}}

func runColor(i int) color.Color { return runColors[i%len(runColors)] }

// Line dash patterns.
var (
	dashed = []vg.Length{vg.Points(6), vg.Points(3)}
	dotted = []vg.Length{vg.Points(2), vg.Points(2)}
)

// builder assembles a figure whose axis ranges it computes itself (ending on ticks), and
// decorations that span the axes (SLO lines, knee lines) are added once the ranges are known.
type builder struct {
	p          *plot.Plot
	logX, logY bool
	// xs, ys are the tracked points.
	xs, ys []float64
	// xOnly widens the x range without touching y (vertical markers).
	xOnly   []float64
	entries []legendEntry
	// marks are the glyphs drawn (point labels keep clear of them), lines the polylines.
	marks []mark
	lines []plotter.XYs
	// labels places point labels once the ranges are known (nil without labels).
	labels *labelPlacer
	// maxMark is the maximum-TPS marker of the throughput chart (nil elsewhere).
	maxMark *beside
	// decorate run once the ranges are known.
	decorate []func(r ranges) error
	// empty is set when there is nothing to draw.
	empty bool
	// autoLogY switches the y axis to a log scale when the data span more than 100× and none
	// is 0 or below (a log axis cannot place it).
	autoLogY bool
}

// ranges are the final axis ranges and the top of the data (vertical markers stop there, below
// the legend).
type ranges struct {
	xmin, xmax, ymin, ymax float64
	dataTop                float64
}

func newBuilder(title, xlabel, ylabel string) *builder {
	p := plot.New()
	useSans(p)
	p.Title.Text = title
	p.Title.Padding = vg.Points(6)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	g := plotter.NewGrid()
	g.Vertical.Color, g.Horizontal.Color = colGrid, colGrid
	p.Add(g)
	return &builder{p: p}
}

// mark is a glyph drawn at (x, y) of radius r.
type mark struct {
	x, y float64
	r    vg.Length
}

// figure returns the built chart.
func (b *builder) figure() *Figure {
	kind, _, _ := strings.Cut(b.p.Title.Text, "\n")
	return &Figure{p: b.p, kind: kind, entries: b.entries, labels: b.labels}
}

// track records data points for the range and legend computations. Non-finite values and,
// on log axes, non-positive values are ignored.
func (b *builder) track(xs, ys []float64) {
	for i := range xs {
		if finite(xs[i]) && finite(ys[i]) {
			b.xs = append(b.xs, xs[i])
			b.ys = append(b.ys, ys[i])
		}
	}
}

func (b *builder) legend(name string, thumbs ...plot.Thumbnailer) {
	b.entries = append(b.entries, legendEntry{name: name, thumbs: thumbs})
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// pow2Ticks marks powers of two on a log-scaled concurrency axis; when there are many, every
// other one is labelled. Ranges without a power of two inside fall back to plot.LogTicks.
type pow2Ticks struct{}

// Ticks implements plot.Ticker.
func (pow2Ticks) Ticks(lo, hi float64) []plot.Tick {
	if lo <= 0 || hi <= lo {
		return nil
	}
	k0, k1 := int(math.Ceil(math.Log2(lo)-1e-9)), int(math.Floor(math.Log2(hi)+1e-9))
	if k1 < k0 {
		return plot.LogTicks{Prec: -1}.Ticks(lo, hi)
	}
	step := 1
	for (k1-k0)/step+1 > 12 {
		step++
	}
	var ts []plot.Tick
	for k := k0; k <= k1; k++ {
		v := math.Exp2(float64(k))
		t := plot.Tick{Value: v}
		if (k-k0)%step == 0 {
			t.Label = strconv.FormatFloat(v, 'g', -1, 64)
		}
		ts = append(ts, t)
	}
	return ts
}

// niceTicks marks a linear axis at 1, 2 or 5 × 10^k steps, four to eight labelled ticks with as
// many decimals as the step needs, and four minor ticks between.
type niceTicks struct{}

// Ticks implements plot.Ticker.
func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || !finite(lo) || !finite(hi) {
		return nil
	}
	step := niceStep(lo, hi)
	prec := 0
	if step < 1 {
		prec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	var ts []plot.Tick
	minor := step / 5
	for k := math.Ceil(lo / minor); k*minor <= hi*(1+1e-12); k++ {
		v := k * minor
		t := plot.Tick{Value: v}
		if math.Abs(math.Mod(k, 5)) < 1e-9 {
			t.Label = strconv.FormatFloat(v, 'f', prec, 64)
		}
		ts = append(ts, t)
		if len(ts) > 200 {
			break
		}
	}
	return ts
}

// title names the chart, then, on a second line, the run (subtitle).
func title(kind string, m analysis.Meta) string {
	if sub := subtitle(m); sub != "" {
		return kind + "\n" + sub
	}
	return kind
}

// subtitle names the run: model, endpoint and date (from res.Meta), else its name. The
// in-process simulator of `kneecap demo` listens on an ephemeral loopback port that means
// nothing to a reader: a loopback endpoint of kneecap-sim is "built-in simulator".
func subtitle(m analysis.Meta) string {
	var parts []string
	for _, s := range []string{m.Model, endpointName(m), formatDate(m.Date)} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if len(parts) == 0 && m.Name != "" {
		parts = append(parts, m.Name)
	}
	return strings.Join(parts, " · ")
}

// endpointName is m's endpoint as the titles print it.
func endpointName(m analysis.Meta) string {
	if m.Server == nil || m.Server.Engine != server.SimEngine {
		return m.Endpoint
	}
	u, err := url.Parse(m.Endpoint)
	if err != nil {
		return m.Endpoint
	}
	if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || ip != nil && ip.IsLoopback() {
		return "built-in simulator"
	}
	return m.Endpoint
}

// formatDate shortens an RFC 3339 date to minutes in UTC; anything else is returned as is.
func formatDate(s string) string {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return s
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

// noData turns b's plot into an empty chart with a centred note.
func (b *builder) noData(note string) (*builder, error) {
	b.empty = true
	p := b.p
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.HideAxes()
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: 0.5, Y: 0.5}}, Labels: []string{note}})
	if err != nil {
		return nil, fmt.Errorf("plots: no-data note: %w", err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].XAlign = text.XCenter
		l.TextStyle[i].YAlign = text.YCenter
		l.TextStyle[i].Color = colGray
		l.TextStyle[i].Font.Size = vg.Points(14)
	}
	p.Add(l)
	return b, nil
}

// sortedLevels returns res.Levels sorted by concurrency (a copy), without the runs a retry
// superseded (its retry is the level's point).
func sortedLevels(res *analysis.Result) []analysis.Level {
	if res == nil {
		return nil
	}
	var ls []analysis.Level
	for _, l := range res.Levels {
		if !l.Superseded {
			ls = append(ls, l)
		}
	}
	sort.SliceStable(ls, func(i, j int) bool { return ls[i].Concurrency < ls[j].Concurrency })
	return ls
}

// series splits the levels' (x, y) into valid and invalid points, dropping points where
// either value is not finite or, for concurrency, not positive.
func series(ls []analysis.Level, x, y func(l *analysis.Level) analysis.Float) (valid, invalid plotter.XYs) {
	for i := range ls {
		l := &ls[i]
		xv, yv := x(l), y(l)
		if !xv.OK() || !yv.OK() {
			continue
		}
		pt := plotter.XY{X: float64(xv), Y: float64(yv)}
		if l.Valid {
			valid = append(valid, pt)
		} else {
			invalid = append(invalid, pt)
		}
	}
	return valid, invalid
}

func concurrency(l *analysis.Level) analysis.Float {
	if l.Concurrency <= 0 {
		return analysis.NaN()
	}
	return analysis.Float(l.Concurrency)
}

// addSeries draws valid points joined by a line with filled glyphs and invalid points hollow,
// and tracks both. The legend gets one entry for the valid series; the caller adds a shared
// "excluded" entry via finishExcluded.
func (b *builder) addSeries(name string, c color.Color, dash []vg.Length, glyph draw.GlyphDrawer, valid, invalid plotter.XYs) (hadInvalid bool, err error) {
	if len(valid) > 0 {
		l, s, err := plotter.NewLinePoints(valid)
		if err != nil {
			return false, fmt.Errorf("plots: %s: %w", name, err)
		}
		l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dash
		s.Color, s.Shape, s.Radius = c, glyph, vg.Points(3)
		b.p.Add(l, s)
		b.legend(name, l, s)
		b.track(xsOf(valid), ysOf(valid))
		b.marked(valid, s.Radius)
		b.lines = append(b.lines, valid)
	}
	if len(invalid) > 0 {
		s, err := plotter.NewScatter(invalid)
		if err != nil {
			return false, fmt.Errorf("plots: %s (excluded): %w", name, err)
		}
		s.Color, s.Shape, s.Radius = c, draw.RingGlyph{}, vg.Points(3.5)
		b.p.Add(s)
		b.track(xsOf(invalid), ysOf(invalid))
		b.marked(invalid, s.Radius)
		if len(valid) == 0 {
			b.legend(name+" (excluded)", s)
		}
	}
	return len(invalid) > 0, nil
}

// marked records glyphs of radius r at pts, which point labels keep clear of.
func (b *builder) marked(pts plotter.XYs, r vg.Length) {
	for _, p := range pts {
		b.marks = append(b.marks, mark{p.X, p.Y, r})
	}
}

// markAdded rings the levels a sweep added after its planned ones (sweep.refine) with a
// square, so a reader sees which points were measured to pin an answer down.
func (b *builder) markAdded(ls []analysis.Level, y func(l *analysis.Level) analysis.Float) error {
	var pts plotter.XYs
	for i := range ls {
		l := &ls[i]
		if v := y(l); l.Refine != "" && l.Concurrency > 0 && v.OK() {
			pts = append(pts, plotter.XY{X: float64(l.Concurrency), Y: float64(v)})
		}
	}
	if len(pts) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return fmt.Errorf("plots: added levels: %w", err)
	}
	s.GlyphStyle = draw.GlyphStyle{Color: colGray, Shape: hollowBox{}, Radius: vg.Points(5.5)}
	b.p.Add(s)
	b.marked(pts, s.Radius)
	b.legend("level added after the planned ones (sweep.refine)", s)
	return nil
}

// hollowBox draws a square outline: the added-level mark around a data point.
type hollowBox struct{}

func (hollowBox) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineStyle(draw.LineStyle{Color: sty.Color, Width: vg.Points(1)})
	r := sty.Radius
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Close()
	c.Stroke(p)
}

// finishExcluded finishes the plot (finish), first adding the legend entry of the hollow
// glyphs when excluded levels were drawn.
func (b *builder) finishExcluded(excluded bool) (*builder, error) {
	if excluded {
		s := &plotter.Scatter{GlyphStyle: draw.GlyphStyle{Color: colGray, Shape: draw.RingGlyph{}, Radius: vg.Points(3.5)}}
		b.legend("hollow: excluded level (invalid)", s)
	}
	return b.finish()
}

func xsOf(xy plotter.XYs) []float64 {
	out := make([]float64, len(xy))
	for i := range xy {
		out[i] = xy[i].X
	}
	return out
}

func ysOf(xy plotter.XYs) []float64 {
	out := make([]float64, len(xy))
	for i := range xy {
		out[i] = xy[i].Y
	}
	return out
}

// vline draws a vertical line at x from the bottom of the axis to the top of the data (so it
// stays clear of the legend above the data).
func (b *builder) vline(x float64, name string, c color.Color, dash []vg.Length) {
	if thumb := b.guide(x, c, dash); thumb != nil {
		b.legend(name, thumb)
	}
}

// guide draws vline's line without a legend entry and returns the line's legend thumbnail,
// nil when x cannot be drawn.
func (b *builder) guide(x float64, c color.Color, dash []vg.Length) *plotter.Line {
	if !finite(x) || b.logX && x <= 0 {
		return nil
	}
	b.xOnly = append(b.xOnly, x)
	thumb := &plotter.Line{LineStyle: draw.LineStyle{Color: c, Width: vg.Points(1.5), Dashes: dash}}
	d := &deferred{}
	b.p.Add(d)
	b.decorate = append(b.decorate, func(r ranges) error {
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: r.ymin}, {X: x, Y: r.dataTop}})
		if err != nil {
			return fmt.Errorf("plots: vertical line at %g: %w", x, err)
		}
		l.LineStyle = thumb.LineStyle
		d.p = l
		return nil
	})
	return thumb
}

// deferred is a plotter added in drawing order whose content is known only once the axis
// ranges are.
type deferred struct{ p plot.Plotter }

// Plot implements plot.Plotter.
func (d *deferred) Plot(c draw.Canvas, p *plot.Plot) {
	if d.p != nil {
		d.p.Plot(c, p)
	}
}

// hline schedules a horizontal line at y across the x range, tracked at both ends so the
// legend keeps clear of it.
func (b *builder) hline(y float64, name string, c color.Color, dash []vg.Length) {
	if !finite(y) || y <= 0 || len(b.xs) == 0 {
		return
	}
	xlo, xhi := math.Inf(1), math.Inf(-1)
	for _, x := range b.xs {
		if finite(x) && (!b.logX || x > 0) {
			xlo, xhi = math.Min(xlo, x), math.Max(xhi, x)
		}
	}
	if !finite(xlo) {
		return
	}
	b.track([]float64{xlo, xhi}, []float64{y, y})
	thumb := &plotter.Line{LineStyle: draw.LineStyle{Color: c, Width: vg.Points(1.5), Dashes: dash}}
	b.legend(name, thumb)
	d := &deferred{}
	b.p.Add(d)
	b.decorate = append(b.decorate, func(r ranges) error {
		l, err := plotter.NewLine(plotter.XYs{{X: r.xmin, Y: y}, {X: r.xmax, Y: y}})
		if err != nil {
			return fmt.Errorf("plots: %s: %w", name, err)
		}
		l.LineStyle = thumb.LineStyle
		d.p = l
		return nil
	})
}

// fmtNum formats a number with about three significant digits and no exponent for ordinary
// magnitudes.
func fmtNum(v float64) string { return analysis.Float(v).Format() }

// plotOf unwraps a builder's plot.
func plotOf(b *builder, err error) (*Figure, error) {
	if err != nil {
		return nil, err
	}
	return b.figure(), nil
}
