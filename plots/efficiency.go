package plots

import (
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// The efficiency chart of a run with GPU telemetry (DESIGN §4.16, §5.1): J per output token
// above, the GPUs' power below, against the run's load axis, with the energy optimum, the knee
// (or capacity) and the SLO point marked on both.

// efficiencyName is the efficiency chart's base name; RenderAll renders it when res.Energy is
// set.
const efficiencyName = "efficiency"

// efficiencyHeight is the efficiency chart's height: two panels, each nearly a chart's.
const efficiencyHeight = 8 * vg.Inch

// loadAxis is where a chart places the levels of res on its load axis (analysis.Axis): their
// x, the levels in axis order, whether the axis is log2 and its label.
type loadAxis struct {
	x      func(*analysis.Level) analysis.Float
	levels []analysis.Level
	logX   bool
	label  string
}

// loadAxisOf returns res's load axis: concurrency (log2) or the realised arrival rate.
func loadAxisOf(res *analysis.Result) loadAxis {
	if res != nil && res.Axis().IsRate() {
		return loadAxis{x: arrival, levels: rateLevelsOf(res), label: xLabelRate}
	}
	return loadAxis{x: concurrency, levels: sortedLevels(res), logX: true, label: xLabelConcurrency}
}

// gpuFigure returns a level's GPU figure get, NaN for a level without GPU figures.
func gpuFigure(get func(g *analysis.LevelGPU) analysis.Float) func(*analysis.Level) analysis.Float {
	return func(l *analysis.Level) analysis.Float {
		if l.GPU == nil {
			return analysis.NaN()
		}
		return get(l.GPU)
	}
}

// efficiency is the two-panel efficiency chart of res (meant for Width × efficiencyHeight):
// energyChart above powerChart, under res's subtitle.
func efficiency(res *analysis.Result) (*Grid, error) {
	var figs []*Figure
	for _, build := range []func(*analysis.Result) (*builder, error){energyChart, powerChart} {
		b, err := build(res)
		if err != nil {
			return nil, fmt.Errorf("plots: efficiency: %w", err)
		}
		f := b.figure()
		f.p.Title.Text = f.kind
		figs = append(figs, f)
	}
	return &Grid{Figures: [][]*Figure{{figs[0]}, {figs[1]}}, Subtitle: subtitle(meta(res)), Pad: vg.Points(6)}, nil
}

// energyChart draws J per token of each level with GPU figures (and above the idle power,
// dashed) against the load axis, the energy optimum ringed with its 95% interval shaded, and
// the knee (or capacity) and the SLO point as vertical lines, each labelled with its J per
// token. The tokens are the run's yardstick's (tpsOf): output, or an embeddings run's input.
func energyChart(res *analysis.Result) (*builder, error) {
	ax := loadAxisOf(res)
	tok := tpsOf(res).tokens
	b := newBuilder(title("Energy per "+tok+" token", meta(res)), ax.label, "energy per "+tok+" token (J)")
	b.logX = ax.logX
	valid, invalid := series(ax.levels, ax.x, gpuFigure(func(g *analysis.LevelGPU) analysis.Float { return g.JPerOutputToken }))
	if len(valid)+len(invalid) == 0 {
		return b.noData("no data: no level has GPU energy figures")
	}
	e := energyOf(res)
	if iv := e.Optimal.Interval; iv != nil && iv[0].OK() && iv[1].OK() && iv[1] > iv[0] {
		b.shadeX(float64(iv[0]), float64(iv[1]), "energy optimum 95% interval ["+fmtNum(float64(iv[0]))+", "+fmtNum(float64(iv[1]))+"]")
	}
	hadInvalid, err := b.addSeries("J per "+tok+" token (GPU energy ÷ "+tok+" tokens)", colBlue, nil, draw.CircleGlyph{}, valid, invalid)
	if err != nil {
		return nil, err
	}
	above, aboveInv := series(ax.levels, ax.x, gpuFigure(func(g *analysis.LevelGPU) analysis.Float { return g.JPerOutputTokenAboveIdle }))
	if _, err := b.addSeries("J per "+tok+" token above idle power", colOrange, dashed, draw.SquareGlyph{}, above, aboveInv); err != nil {
		return nil, err
	}
	if err := b.optimumMark(res, e.Optimal); err != nil {
		return nil, err
	}
	for _, m := range energyMarks(res, e) {
		b.vline(m.x, m.name+": "+fmtJoules(m.j)+" J/token", m.style.Color, m.style.Dashes)
	}
	return b.finishExcluded(hadInvalid)
}

// powerChart draws the GPUs' total power (mean, and p95 dotted) of each level with GPU figures
// against the load axis, the idle power, and the lines of energyChart without their labels.
func powerChart(res *analysis.Result) (*builder, error) {
	ax := loadAxisOf(res)
	e := energyOf(res)
	kind := "GPU power"
	if e.GPUs > 0 {
		kind += " (" + strconv.Itoa(e.GPUs) + " GPU" + plural(e.GPUs) + ")"
	}
	b := newBuilder(title(kind, meta(res)), ax.label, "GPU power, all GPUs counted (W)")
	b.logX = ax.logX
	drawn, hadInvalid, err := b.addLatencies(ax.levels, ax.x, []latencySeries{
		{"GPU power, mean", colBrown, nil, draw.CircleGlyph{}, gpuFigure(func(g *analysis.LevelGPU) analysis.Float { return g.PowerW.Mean })},
		{"GPU power, p95", colGray, dotted, draw.TriangleGlyph{}, gpuFigure(func(g *analysis.LevelGPU) analysis.Float { return g.PowerW.P95 })},
	})
	if err != nil {
		return nil, err
	}
	if !drawn {
		return b.noData("no data: no level has a GPU power")
	}
	if e.IdleW.OK() {
		b.hline(float64(e.IdleW), "idle "+fmtNum(float64(e.IdleW))+" W (before the first level)", colGray, dashed)
	}
	var thumb *plotter.Line
	for _, m := range append([]energyMark{optimumLine(res, e.Optimal)}, energyMarks(res, e)...) {
		if t := b.guide(m.x, m.style.Color, m.style.Dashes); t != nil && thumb == nil {
			thumb = t
		}
	}
	if thumb != nil {
		b.legend("vertical lines as above: energy optimum (green), "+kneeWord(res)+" (purple), SLO point (red)", thumb)
	}
	return b.finishExcluded(hadInvalid)
}

// energyMark is a place on the load axis the efficiency chart marks: x, its name, J per output
// token there and the line's style.
type energyMark struct {
	x, j  float64
	name  string
	style draw.LineStyle
}

// energyOf returns res's energy answers, all null when it has none.
func energyOf(res *analysis.Result) analysis.Energy {
	if res == nil || res.Energy == nil {
		n := analysis.NaN()
		none := analysis.EnergyPoint{X: n, JPerOutputToken: n, PowerW: n}
		return analysis.Energy{IdleW: n, Optimal: none, AtKnee: none, AtSLOPoint: none, AtMaxTPS: none}
	}
	return *res.Energy
}

// energyMarks are the knee (an arrival-rate run's capacity) and the SLO point of e, those
// placed on the axis.
func energyMarks(res *analysis.Result, e analysis.Energy) []energyMark {
	var out []energyMark
	for _, m := range []energyMark{
		{float64(e.AtKnee.X), float64(e.AtKnee.JPerOutputToken), atPlace(res, kneeWord(res), e.AtKnee.X), lineStyle(colPurple, dashed)},
		{float64(e.AtSLOPoint.X), float64(e.AtSLOPoint.JPerOutputToken), atPlace(res, "SLO point", e.AtSLOPoint.X), lineStyle(colRed, dotted)},
	} {
		if finite(m.x) && m.x > 0 {
			out = append(out, m)
		}
	}
	return out
}

// kneeWord names the place of Energy.AtKnee: the knee, or an arrival-rate run's capacity.
func kneeWord(res *analysis.Result) string {
	if res != nil && res.Axis().IsRate() {
		return "capacity"
	}
	return "knee"
}

// optimumLine is the energy optimum's line on the power panel.
func optimumLine(res *analysis.Result, p analysis.EnergyPoint) energyMark {
	return energyMark{float64(p.X), float64(p.JPerOutputToken), atPlace(res, "energy optimum", p.X), lineStyle(colGreen, dashed)}
}

// optimumMark rings the energy optimum at its J per output token, labelled with its place and
// value; an optimum not computed draws nothing.
func (b *builder) optimumMark(res *analysis.Result, p analysis.EnergyPoint) error {
	m := optimumLine(res, p)
	if !finite(m.x) || m.x <= 0 || !finite(m.j) {
		return nil
	}
	pts := plotter.XYs{{X: m.x, Y: m.j}}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return fmt.Errorf("plots: energy optimum: %w", err)
	}
	s.Color, s.Shape, s.Radius = colGreen, draw.RingGlyph{}, vg.Points(7)
	b.p.Add(s)
	b.track(xsOf(pts), ysOf(pts))
	b.marked(pts, s.Radius)
	b.legend(m.name+": "+fmtJoules(m.j)+" J/token (lowest)", s)
	return nil
}

// atPlace names what at x on res's load axis as the charts do: "knee N≈32.6", "SLO point ≈
// 20.6 req/s".
func atPlace(res *analysis.Result, what string, x analysis.Float) string {
	if res != nil && res.Axis().IsRate() {
		return what + " ≈ " + fmtNum(float64(x)) + " req/s"
	}
	return what + " N≈" + fmtConc(float64(x))
}

// lineStyle is a marker line's style of colour c and dashes.
func lineStyle(c color.Color, dashes []vg.Length) draw.LineStyle {
	return draw.LineStyle{Color: c, Width: vg.Points(1.5), Dashes: dashes}
}

// fmtJoules formats J per output token with three significant digits (0.196, 1.25).
func fmtJoules(v float64) string {
	if !finite(v) {
		return "—"
	}
	if v >= 100 || v <= -100 {
		return fmtNum(v)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// plural is "s" unless n is 1.
func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}
