package plots

import (
	"fmt"
	"image/color"
	"math"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

const xLabelConcurrency = "concurrency (requests in flight, log2 scale)"

// throughput draws output tokens/s against concurrency on a log2 axis: measured levels with
// their 95% confidence bars (output_tps_ci95), the fitted USL curve and, when the headline
// knee was read from another model (batch, hinge), that model's curve, the knee (labelled
// with its method and rule) with its 95% interval shaded, the efficient point when it is not
// the knee (the plateau-onset rule), the maximum measured TPS, and the SLO limit (slo.max_concurrency); when
// every valid level meets the SLOs (slo.limit empty) that line is grey and says the SLO holds
// up to the last level (≥ N) instead.
func throughput(res *analysis.Result) (*Figure, error) {
	return plotOf(throughputChart(res))
}

func throughputChart(res *analysis.Result) (*builder, error) {
	ct := tpsOf(res)
	tps, tpsCI, tokens := ct.tps, ct.ci, ct.tokens
	b := newBuilder(title(ct.title, meta(res)), xLabelConcurrency, tokens+" throughput (tokens/s)")
	b.logX = true
	ls := sortedLevels(res)
	valid, invalid := series(ls, concurrency, tps)
	if len(valid)+len(invalid) == 0 {
		return b.noData("no data: no level has a measured " + tokens + " throughput")
	}
	// The knee interval first, so the data draws over it.
	if k := kneeOf(res); k != nil && k.Concurrency.OK() && k.Concurrency > 0 {
		lo, hi := k.Interval[0], k.Interval[1]
		if lo.OK() && hi.OK() && lo > 0 && hi > lo {
			b.shadeX(float64(lo), float64(hi), "knee 95% interval ["+fmtNum(float64(lo))+", "+fmtNum(float64(hi))+"]")
		}
	}
	// 95% CI bars next, so points draw over them.
	var ci struct {
		plotter.XYs
		plotter.YErrors
	}
	for i := range ls {
		l := &ls[i]
		if y, e := tps(l), tpsCI(l); l.Concurrency > 0 && y.OK() && e.OK() && e > 0 {
			y, e := float64(y), float64(e)
			ci.XYs = append(ci.XYs, plotter.XY{X: float64(l.Concurrency), Y: y})
			ci.YErrors = append(ci.YErrors, struct{ Low, High float64 }{e, e})
			b.track([]float64{float64(l.Concurrency), float64(l.Concurrency)}, []float64{y - e, y + e})
		}
	}
	if len(ci.XYs) > 0 {
		eb, err := plotter.NewYErrorBars(ci)
		if err != nil {
			return nil, fmt.Errorf("plots: throughput ci: %w", err)
		}
		eb.Color, eb.CapWidth = colBlue, vg.Points(5)
		b.p.Add(eb)
	}
	hadInvalid, err := b.addSeries("measured (±95% CI)", colBlue, nil, draw.CircleGlyph{}, valid, invalid)
	if err != nil {
		return nil, err
	}
	if err := b.markAdded(ls, tps); err != nil {
		return nil, err
	}
	var th analysis.Throughput
	if res != nil {
		th = res.Throughput
	}
	lo, hi := xExtent(valid, invalid)
	// The curve the headline knee was read from, when it is not the USL (drawn next).
	if k := kneeOf(res); k != nil {
		var f func(float64) float64
		var r2 analysis.Float
		switch {
		case k.Method == analysis.MethodBatch && th.Batch != nil && th.Batch.Alpha.OK() && th.Batch.Beta.OK() && th.Batch.Limit.OK():
			f, r2 = th.Batch.At, th.Batch.R2
		case k.Method == analysis.MethodHinge && th.Hinge != nil && th.Hinge.Breakpoint.OK() && th.Hinge.Slope.OK() && th.Hinge.PlateauTPS.OK():
			f, r2 = th.Hinge.At, th.Hinge.R2
		}
		if f != nil {
			if err := b.fitLine(sampleCurve(f, lo, hi), k.Method.Label()+" fit", r2, colGreen, nil); err != nil {
				return nil, err
			}
		}
	}
	if u := th.USL; u != nil && u.Lambda.OK() && u.Sigma.OK() && u.Kappa.OK() {
		if err := b.fitLine(sampleCurve(u.At, lo, hi), analysis.MethodUSL.Label()+" fit", u.R2, colOrange, dashed); err != nil {
			return nil, err
		}
	}
	if k := kneeOf(res); k != nil && k.Concurrency.OK() && k.Concurrency > 0 {
		b.vline(float64(k.Concurrency), "knee N≈"+fmtNum(float64(k.Concurrency))+kneeHow(k, ""), colPurple, dashed)
		// The efficient point is drawn when it is not the knee itself (the plateau-onset rule).
		if e := res.EfficientPoint; k.Rule == analysis.RulePlateauOnset && e != nil && e.Concurrency.OK() && e.Concurrency > 0 {
			name := "efficient point N≈" + fmtNum(float64(e.Concurrency))
			if e.Gain.OK() && e.Gain > 0 {
				name += fmt.Sprintf(" (next doubling < +%.3g%%)", float64(e.Gain)*100)
			}
			b.vline(float64(e.Concurrency), name, colBrown, dotted)
		}
	}
	if th.MaxTPS.OK() && th.MaxTPSConcurrency > 0 {
		m := &beside{x: float64(th.MaxTPSConcurrency), y: float64(th.MaxTPS), dx: vg.Points(11),
			style: draw.GlyphStyle{Color: colRed, Shape: leftTriangle{}, Radius: vg.Points(5)}}
		b.p.Add(m)
		b.maxMark = m
		b.legend(fmt.Sprintf("max %s tok/s @ N=%d", fmtNum(float64(th.MaxTPS)), th.MaxTPSConcurrency),
			&plotter.Scatter{GlyphStyle: m.style})
		b.track([]float64{float64(th.MaxTPSConcurrency)}, []float64{float64(th.MaxTPS)})
	}
	if res != nil && res.SLO.MaxConcurrency.OK() && res.SLO.MaxConcurrency > 0 {
		n := float64(res.SLO.MaxConcurrency)
		if res.SLO.Limit == "" {
			// Every valid level meets the SLOs: max_concurrency is the largest level, and the
			// limit lies beyond the measured range, not at that line.
			b.vline(n, "SLO met up to the last level (≥ "+fmtConc(n)+")", colGray, dotted)
		} else {
			b.vline(n, "SLO limit N≈"+fmtConc(n), colRed, dotted)
		}
	}
	return b.finishExcluded(hadInvalid)
}

// fmtConc formats a concurrency that may be interpolated (45.3) or a level (64): a value
// within rounding error of a whole number (exp(log 64) = 63.99999999999998) is that level.
func fmtConc(v float64) string {
	if finite(v) && math.Abs(v-math.Round(v)) <= 1e-9*math.Max(1, math.Abs(v)) {
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	}
	return fmtNum(v)
}

// sampleCurve samples a fitted throughput curve evenly in log2 N over [lo, hi], keeping the
// finite, non-negative points.
func sampleCurve(f func(float64) float64, lo, hi float64) plotter.XYs {
	if !(lo > 0) || !(hi >= lo) {
		return nil
	}
	const n = 120
	var out plotter.XYs
	for i := 0; i <= n; i++ {
		x := lo * math.Pow(hi/lo, float64(i)/n)
		if y := f(x); finite(y) && y >= 0 {
			out = append(out, plotter.XY{X: x, Y: y})
		}
	}
	return out
}

// fitLine draws a fitted curve named "name (R²=…)" in the legend; fewer than two points draw
// nothing.
func (b *builder) fitLine(curve plotter.XYs, name string, r2 analysis.Float, c color.Color, dashes []vg.Length) error {
	if len(curve) < 2 {
		return nil
	}
	l, err := plotter.NewLine(curve)
	if err != nil {
		return fmt.Errorf("plots: %s: %w", name, err)
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashes
	b.p.Add(l)
	if r2.OK() {
		name += fmt.Sprintf(" (R²=%.3f)", float64(r2))
	}
	b.legend(name, l)
	b.track(xsOf(curve), ysOf(curve))
	return nil
}

func xExtent(sets ...plotter.XYs) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range sets {
		for _, p := range s {
			lo, hi = math.Min(lo, p.X), math.Max(hi, p.X)
		}
	}
	return lo, hi
}

// shadeX draws a translucent band between x = lo and x = hi, from the axis to the top of the
// data. Call it before adding the data so the band lies underneath.
func (b *builder) shadeX(lo, hi float64, name string) {
	b.xOnly = append(b.xOnly, lo, hi)
	thumb := &plotter.Polygon{Color: colShade}
	b.legend(name, thumb)
	d := &deferred{}
	b.p.Add(d)
	b.decorate = append(b.decorate, func(r ranges) error {
		pg, err := plotter.NewPolygon(plotter.XYs{{X: lo, Y: r.ymin}, {X: hi, Y: r.ymin}, {X: hi, Y: r.dataTop}, {X: lo, Y: r.dataTop}})
		if err != nil {
			return fmt.Errorf("plots: %s: %w", name, err)
		}
		pg.Color = colShade
		pg.LineStyle.Width = 0
		d.p = pg
		return nil
	})
}

// latencySeries is one latency curve of a chart.
type latencySeries struct {
	name  string
	c     color.Color
	dash  []vg.Length
	glyph draw.GlyphDrawer
	get   func(l *analysis.Level) analysis.Float
}

// addLatencies draws each series against x (concurrency, or output TPS) and reports whether
// any point was drawn and whether any level was excluded.
func (b *builder) addLatencies(ls []analysis.Level, x func(*analysis.Level) analysis.Float, ss []latencySeries) (drawn, hadInvalid bool, err error) {
	for _, s := range ss {
		v, inv := series(ls, x, s.get)
		drawn = drawn || len(v)+len(inv) > 0
		hi, err := b.addSeries(s.name, s.c, s.dash, s.glyph, v, inv)
		if err != nil {
			return false, false, err
		}
		hadInvalid = hadInvalid || hi
	}
	return drawn, hadInvalid, nil
}

// ttft draws time to first token p50, p95 and p99 against concurrency (log2 axis), each TTFT
// SLO (labelled with its percentile), and the TTFT blow-up (where queueing makes TTFT grow linearly). The y axis turns
// logarithmic when the values span more than 100×.
func ttft(res *analysis.Result) (*Figure, error) {
	return plotOf(ttftChart(res))
}

func ttftChart(res *analysis.Result) (*builder, error) {
	return percentileChart(res, "Time to first token", "TTFT", "ttft", func(l *analysis.Level) analysis.Latency { return l.TTFT })
}

// percentileChart draws the p50, p95 and p99 of a level's latency of (name, metric; of reads
// it) against concurrency, the SLOs on metric and the run's blow-up (Result.TTFTBlowup, of
// the latency the run's analysis watched: TTFT, or an embeddings run's E2E).
func percentileChart(res *analysis.Result, heading, name, metric string, of func(*analysis.Level) analysis.Latency) (*builder, error) {
	b := newBuilder(title(heading, meta(res)), xLabelConcurrency, name+" (ms)")
	b.logX, b.autoLogY = true, true
	objs := sloObjectives(res, metric)
	drawn, hadInvalid, err := b.addLatencies(sortedLevels(res), concurrency, percentileSeries(name, of))
	if err != nil {
		return nil, err
	}
	if !drawn {
		return b.noData("no data: no level has a " + name)
	}
	if res != nil {
		b.sloLines(objs, nil)
		if bu := res.TTFTBlowup; bu != nil && bu.Concurrency.OK() && bu.Concurrency > 0 {
			name := name + " blow-up N≈" + fmtNum(float64(bu.Concurrency))
			if bu.Method != "" {
				name += " (" + bu.Method.Label() + ")"
			}
			b.vline(float64(bu.Concurrency), name, colPurple, dashed)
		}
	}
	return b.finishExcluded(hadInvalid)
}

// tpot draws time per output token p50 and p95, TPOT = (E2E − TTFT) ÷ (N_out − 1), and the
// inter-token latency p99 (purple, dotted) against concurrency (log2 axis), with each TPOT and
// ITL SLO labelled as its metric's alone, so that ITL p99 above a TPOT line does not read as a
// breach; the series of an SLO's percentile the chart lacks (TPOT p99, ITL p50) is added.
func tpot(res *analysis.Result) (*Figure, error) {
	return plotOf(tpotChart(res))
}

func tpotChart(res *analysis.Result) (*builder, error) {
	b := newBuilder(title("Time per output token and inter-token latency", meta(res)), xLabelConcurrency, "TPOT, ITL (ms)")
	b.logX, b.autoLogY = true, true
	objs := sloObjectives(res, "tpot", "itl")
	drawn, hadInvalid, err := b.addLatencies(sortedLevels(res), concurrency, withObjectiveSeries([]latencySeries{
		{"TPOT p50", colBlue, nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return l.TPOT.P50 }},
		{"TPOT p95", colOrange, nil, draw.SquareGlyph{}, func(l *analysis.Level) analysis.Float { return l.TPOT.P95 }},
		{"ITL p99 (gaps between tokens)", colPurple, dotted, draw.TriangleGlyph{}, func(l *analysis.Level) analysis.Float { return l.ITL.P99 }},
	}, objs))
	if err != nil {
		return nil, err
	}
	if !drawn {
		return b.noData("no data: no level has a TPOT or ITL")
	}
	// An SLO on TPOT is on TPOT alone: ITL crossing it is no breach, and the label says so
	// (and the other way round).
	b.sloLines(objs, tpotSLOSuffix(objs))
	return b.finishExcluded(hadInvalid)
}

// qps draws completed requests per second, and goodput (requests meeting every SLO) where
// computed, against concurrency (log2 axis).
func qps(res *analysis.Result) (*Figure, error) {
	return plotOf(qpsChart(res))
}

func qpsChart(res *analysis.Result) (*builder, error) {
	b := newBuilder(title("Request throughput", meta(res)), xLabelConcurrency, "requests/s")
	b.logX = true
	drawn, hadInvalid, err := b.addLatencies(sortedLevels(res), concurrency, []latencySeries{
		{"QPS (completed)", colBlue, nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return l.QPS }},
		{"goodput QPS (met every SLO)", colGreen, dashed, draw.SquareGlyph{}, func(l *analysis.Level) analysis.Float { return l.GoodputQPS }},
	})
	if err != nil {
		return nil, err
	}
	if !drawn {
		return b.noData("no data: no level has a QPS")
	}
	return b.finishExcluded(hadInvalid)
}

// latencyVsThroughput draws E2E p50 and p95 and TTFT p95 against output tokens/s, each point
// labelled with its concurrency, with each E2E SLO (and E2E p99 for a p99 one), the operating
// point (maximum of output TPS ÷ mean E2E) circled and the knee's throughput marked. The y axis turns logarithmic when the values span
// more than 100×.
func latencyVsThroughput(res *analysis.Result) (*Figure, error) {
	return plotOf(latencyVsThroughputChart(res))
}

func latencyVsThroughputChart(res *analysis.Result) (*builder, error) {
	ct := tpsOf(res)
	tps, tokens := ct.tps, ct.tokens
	b := newBuilder(title("Latency vs throughput", meta(res)), tokens+" throughput (tokens/s)", "latency (ms)")
	b.autoLogY = true
	ls := sortedLevels(res)
	objs := sloObjectives(res, "e2e")
	ss := []latencySeries{
		{"E2E p50", colBlue, nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return l.E2E.P50 }},
		{"E2E p95", colOrange, nil, draw.SquareGlyph{}, func(l *analysis.Level) analysis.Float { return l.E2E.P95 }},
		{"TTFT p95", colRed, dashed, draw.TriangleGlyph{}, func(l *analysis.Level) analysis.Float { return l.TTFT.P95 }},
	}
	if whole(res) {
		ss = ss[:2] // an embeddings answer has no TTFT
	}
	drawn, hadInvalid, err := b.addLatencies(ls, tps, withObjectiveSeries(ss, objs))
	if err != nil {
		return nil, err
	}
	if !drawn {
		return b.noData("no data: no level has both " + tokens + " throughput and latency")
	}
	// Label the E2E p95 points (else E2E p50) with their concurrency.
	b.addLabels(concurrencyLabels(ls, tps, func(l *analysis.Level) analysis.Float { return l.E2E.P50 }), colGray)
	b.sloLines(objs, nil)
	if res != nil {
		if op := res.OperatingPoint; op != nil && op.Concurrency.OK() {
			if l := nearestLevel(ls, float64(op.Concurrency)); l != nil && tps(l).OK() {
				var pts plotter.XYs
				for _, y := range []analysis.Float{l.E2E.P50, l.E2E.P95} {
					if y.OK() {
						pts = append(pts, plotter.XY{X: float64(tps(l)), Y: float64(y)})
					}
				}
				if len(pts) > 0 {
					s, err := plotter.NewScatter(pts)
					if err != nil {
						return nil, fmt.Errorf("plots: operating point: %w", err)
					}
					s.Color, s.Shape, s.Radius = colGreen, draw.RingGlyph{}, vg.Points(7)
					b.p.Add(s)
					b.marked(pts, s.Radius)
					b.legend(fmt.Sprintf("operating point N=%d (max TPS÷E2E)", l.Concurrency), s)
				}
			}
		}
		if k := res.Knee; k != nil && k.TPS.OK() && k.TPS > 0 {
			b.vline(float64(k.TPS), "knee "+fmtNum(float64(k.TPS))+" tok/s (N≈"+fmtNum(float64(k.Concurrency))+")", colPurple, dashed)
		}
	}
	return b.finishExcluded(hadInvalid)
}

// nearestLevel returns the level whose concurrency is nearest to c in log scale.
func nearestLevel(ls []analysis.Level, c float64) *analysis.Level {
	var best *analysis.Level
	bestD := math.Inf(1)
	for i := range ls {
		if ls[i].Concurrency <= 0 || !(c > 0) {
			continue
		}
		d := math.Abs(math.Log(float64(ls[i].Concurrency) / c))
		if d < bestD {
			best, bestD = &ls[i], d
		}
	}
	return best
}

// outputTPS is a level's output tokens/s, the x of the latency-vs-throughput charts.
func outputTPS(l *analysis.Level) analysis.Float { return l.OutputTPS }

func meta(res *analysis.Result) analysis.Meta {
	if res == nil {
		return analysis.Meta{}
	}
	return res.Meta
}

// kneeHow is the method and rule of a knee as a chart's label gives them, the method's label
// followed by fit: " (batch, plateau onset)", " (USL fit, marginal gain)" (fit " fit"),
// " (USL)" for a knee without a rule, or "".
func kneeHow(k *analysis.Knee, fit string) string {
	var parts []string
	if k.Method != "" {
		parts = append(parts, k.Method.Label()+fit)
	}
	if k.Rule != "" {
		parts = append(parts, k.Rule.Label())
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func kneeOf(res *analysis.Result) *analysis.Knee {
	if res == nil {
		return nil
	}
	return res.Knee
}

// concurrencyLabels labels each level's (tps, E2E p95) point "N=c", at the fallback latency
// where E2E p95 is missing; levels without either are skipped. tps is the throughput the
// points are drawn at (tpsOf: output tokens/s, or an embeddings run's input tokens/s).
func concurrencyLabels(ls []analysis.Level, tps, fallback func(*analysis.Level) analysis.Float) plotter.XYLabels {
	var lab plotter.XYLabels
	for i := range ls {
		l := &ls[i]
		y := l.E2E.P95
		if !y.OK() {
			y = fallback(l)
		}
		if x := tps(l); x.OK() && y.OK() {
			lab.XYs = append(lab.XYs, plotter.XY{X: float64(x), Y: float64(y)})
			lab.Labels = append(lab.Labels, fmt.Sprintf("N=%d", l.Concurrency))
		}
	}
	return lab
}

// xLabelRate is the x axis of the rate charts: each level at the arrival rate its window
// realised (the offered rate for a table without it, DESIGN §4.15).
const xLabelRate = "arrival rate, realised (requests/s)"
