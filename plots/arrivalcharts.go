package plots

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// The charts of an arrival-rate run (DESIGN §5.1), against the arrival rate on a linear axis.

// rateLevelsOf returns the rate levels of res by offered rate (a copy).
func rateLevelsOf(res *analysis.Result) []analysis.Level {
	if res == nil {
		return nil
	}
	var ls []analysis.Level
	for _, l := range res.Levels {
		if l.IsRate() && !l.Superseded {
			ls = append(ls, l)
		}
	}
	analysis.SortLevels(ls)
	return ls
}

// arrival is a level's x on the rate charts: the arrival rate its window realised, else its
// offered rate (analysis.Level.ArrivalRate).
func arrival(l *analysis.Level) analysis.Float { return l.ArrivalRate() }

// completion is a level's completion rate in requests/s (analysis.Level.CompletionRate).
func completion(l *analysis.Level) analysis.Float { return l.CompletionRate() }

func rateOf(res *analysis.Result) *analysis.RateResult {
	if res == nil {
		return nil
	}
	return res.Rate
}

// rateThroughput draws the completion rate (requests/s) against the arrival rate: the
// sustainable levels on the line y = x (every request that arrived completed), the unsustainable
// ones below it (points above capacity), the excluded ones hollow; the capacity
// (rate.capacity_rps) with its 95% interval shaded, or "capacity ≥ x" when every level
// sustained its rate; and the SLO point (rate.slo_rps).
func rateThroughput(res *analysis.Result) (*Figure, error) {
	return plotOf(rateThroughputChart(res))
}

func rateThroughputChart(res *analysis.Result) (*builder, error) {
	b := newBuilder(title("Completion rate vs arrival rate", meta(res)), xLabelRate, "completed (requests/s)")
	ls := rateLevelsOf(res)
	var sus, over, inv plotter.XYs
	for i := range ls {
		l := &ls[i]
		x, y := arrival(l), completion(l)
		if !x.OK() || !y.OK() {
			continue
		}
		pt := plotter.XY{X: float64(x), Y: float64(y)}
		switch {
		case !l.Valid:
			inv = append(inv, pt)
		case l.Sustainable:
			sus = append(sus, pt)
		default:
			over = append(over, pt)
		}
	}
	if len(sus)+len(over)+len(inv) == 0 {
		return b.noData("no data: no level has a completion rate")
	}
	rr := rateOf(res)
	if rr != nil && rr.CapacityRPS.OK() && rr.CapacityBound == "" {
		if lo, hi := rr.CapacityInterval[0], rr.CapacityInterval[1]; lo.OK() && hi.OK() && hi > lo {
			b.shadeX(float64(lo), float64(hi), "capacity 95% interval ["+fmtNum(float64(lo))+", "+fmtNum(float64(hi))+"]")
		}
	}
	b.diagonal("y = x: every request that arrived completed")
	if _, err := b.addSeries("sustainable", colBlue, nil, draw.CircleGlyph{}, sus, nil); err != nil {
		return nil, err
	}
	if err := b.scatter("unsustainable: backlog grew (above capacity)", colRed, draw.PyramidGlyph{}, vg.Points(4), over); err != nil {
		return nil, err
	}
	if len(inv) > 0 {
		if err := b.scatter("hollow: excluded level (invalid)", colGray, draw.RingGlyph{}, vg.Points(3.5), inv); err != nil {
			return nil, err
		}
	}
	b.rateMarkers(rr, true)
	return b.finish()
}

// rateMarkers draws the capacity (and with slo the SLO point) as vertical lines.
func (b *builder) rateMarkers(rr *analysis.RateResult, slo bool) {
	if rr == nil {
		return
	}
	if c := float64(rr.CapacityRPS); finite(c) && c > 0 {
		switch rr.CapacityBound {
		case "at_least":
			b.vline(c, "capacity ≥ "+fmtNum(c)+" req/s (every level sustained)", colGray, dotted)
		case "at_most":
			b.vline(c, "capacity ≈ "+fmtNum(c)+" req/s, below every level (none sustained)", colPurple, dashed)
		default:
			name := "capacity ≈ " + fmtNum(c) + " req/s"
			if t := float64(rr.CapacityTPS); finite(t) {
				name += " (" + fmtNum(t) + " tok/s)"
			}
			b.vline(c, name, colPurple, dashed)
		}
	}
	if s := float64(rr.SLORPS); slo && finite(s) && s > 0 {
		b.vline(s, "SLO point ≈ "+fmtNum(s)+" req/s", colRed, dotted)
	}
}

// diagonal draws y = x across the data's range, once the ranges are known.
func (b *builder) diagonal(name string) {
	thumb := &plotter.Line{LineStyle: draw.LineStyle{Color: colGray, Width: vg.Points(1), Dashes: dashed}}
	b.legend(name, thumb)
	d := &deferred{}
	b.p.Add(d)
	b.decorate = append(b.decorate, func(r ranges) error {
		lo, hi := math.Max(r.xmin, r.ymin), math.Min(r.xmax, r.ymax)
		if !(hi > lo) {
			return nil
		}
		l, err := plotter.NewLine(plotter.XYs{{X: lo, Y: lo}, {X: hi, Y: hi}})
		if err != nil {
			return fmt.Errorf("plots: %s: %w", name, err)
		}
		l.LineStyle = thumb.LineStyle
		d.p = l
		return nil
	})
}

// scatter draws pts as glyphs named name in the legend, and tracks them.
func (b *builder) scatter(name string, c color.Color, glyph draw.GlyphDrawer, radius vg.Length, pts plotter.XYs) error {
	if len(pts) == 0 {
		return nil
	}
	s, err := plotter.NewScatter(pts)
	if err != nil {
		return fmt.Errorf("plots: %s: %w", name, err)
	}
	s.Color, s.Shape, s.Radius = c, glyph, radius
	b.p.Add(s)
	b.legend(name, s)
	b.track(xsOf(pts), ysOf(pts))
	b.marked(pts, radius)
	return nil
}

// rateTTFT draws TTFT p50, p95 and p99 against the arrival rate, measured from each request's
// scheduled arrival (the user's view; from the send time for a level without it), beside TTFT
// p95 from the send time (the server's view), with every TTFT SLO, the TTFT blow-up rate and
// the capacity. The y axis turns logarithmic when the values span more than 100×.
func rateTTFT(res *analysis.Result) (*Figure, error) {
	return plotOf(rateLatencyChart(res, "Time to first token vs arrival rate", "TTFT (ms)", (*analysis.Level).UserTTFT,
		func(l *analysis.Level) analysis.Float { return l.TTFT.P95 }, "TTFT", sloObjectives(res, "ttft")))
}

// rateE2E draws E2E p50, p95 and p99 against the arrival rate, from the scheduled arrival (as
// rateTTFT), beside E2E p95 from the send time, with every E2E SLO and the capacity.
func rateE2E(res *analysis.Result) (*Figure, error) {
	return plotOf(rateLatencyChart(res, "End-to-end latency vs arrival rate", "E2E (ms)", (*analysis.Level).UserE2E,
		func(l *analysis.Level) analysis.Float { return l.E2E.P95 }, "E2E", sloObjectives(res, "e2e")))
}

func rateLatencyChart(res *analysis.Result, kind, ylabel string, user func(*analysis.Level) analysis.Latency,
	sentP95 func(*analysis.Level) analysis.Float, name string, slo []analysis.SLOObjective) (*builder, error) {
	b := newBuilder(title(kind, meta(res)), xLabelRate, ylabel)
	b.autoLogY = true
	ls := rateLevelsOf(res)
	from := " (from scheduled arrival)"
	if rr := rateOf(res); rr != nil && rr.LatencyFrom == "sent" {
		from = " (from send)"
	}
	drawn, hadInvalid, err := b.addLatencies(ls, arrival, []latencySeries{
		{name + " p50" + from, colBlue, nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return user(l).P50 }},
		{name + " p95" + from, colOrange, nil, draw.SquareGlyph{}, func(l *analysis.Level) analysis.Float { return user(l).P95 }},
		{name + " p99" + from, colRed, dashed, draw.TriangleGlyph{}, func(l *analysis.Level) analysis.Float { return user(l).P99 }},
	})
	if err != nil {
		return nil, err
	}
	if !drawn {
		return b.noData("no data: no level has a " + name)
	}
	if rr := rateOf(res); rr != nil && rr.LatencyFrom != "sent" {
		v, inv := series(ls, arrival, sentP95)
		if _, err := b.addSeries(name+" p95 from send (the server's view)", colGray, dotted, draw.PlusGlyph{}, v, inv); err != nil {
			return nil, err
		}
	}
	b.sloLines(slo, nil)
	rr := rateOf(res)
	if rr != nil && name == "TTFT" && rr.TTFTBlowupRPS.OK() && rr.TTFTBlowupRPS > 0 {
		label := "TTFT blow-up ≈ " + fmtNum(float64(rr.TTFTBlowupRPS)) + " req/s"
		if rr.TTFTBlowupMethod != "" {
			label += " (" + rr.TTFTBlowupMethod.Label() + ", " + rr.TTFTBlowupStat + ")"
		}
		b.vline(float64(rr.TTFTBlowupRPS), label, colBrown, dashed)
	}
	b.rateMarkers(rr, false)
	return b.finishExcluded(hadInvalid)
}

// rateLag draws the schedule lag (send − scheduled) p50 and p99 against the arrival rate,
// with the 1 ms limit of the lag p99 of a sustainable level (DESIGN §4.15) and the capacity.
func rateLag(res *analysis.Result) (*Figure, error) {
	return plotOf(rateLagChart(res))
}

func rateLagChart(res *analysis.Result) (*builder, error) {
	b := newBuilder(title("Schedule lag (send − scheduled) vs arrival rate", meta(res)), xLabelRate, "lag (ms)")
	b.autoLogY = true
	ls := rateLevelsOf(res)
	drawn, hadInvalid, err := b.addLatencies(ls, arrival, []latencySeries{
		{"lag p50", colBlue, nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return l.ScheduleLag.P50 }},
		{"lag p99", colRed, nil, draw.TriangleGlyph{}, func(l *analysis.Level) analysis.Float { return l.ScheduleLag.P99 }},
	})
	if err != nil {
		return nil, err
	}
	if !drawn {
		return b.noData("no data: no level has a schedule lag")
	}
	b.hline(analysis.MaxScheduleLagMS, fmt.Sprintf("lag p99 limit %g ms (or %.0f%% of TTFT p50)", analysis.MaxScheduleLagMS, analysis.MaxScheduleLagShare*100), colGray, dotted)
	b.rateMarkers(rateOf(res), false)
	return b.finishExcluded(hadInvalid)
}

// rateDashboard is the 2×2 grid of rateThroughput, rateTTFT, rateE2E and rateLag, meant for
// dashboardWidth × dashboardHeight.
func rateDashboard(res *analysis.Result) (*Grid, error) {
	return dashboard(res, rateThroughput, rateTTFT, rateE2E, rateLag)
}
