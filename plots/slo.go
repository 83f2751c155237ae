package plots

import (
	"image/color"
	"slices"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// sloObjectives returns the SLOs res sets on the given metrics (ttft, tpot, itl, e2e), each
// drawn as a line on the chart of its metric.
func sloObjectives(res *analysis.Result, metrics ...string) []analysis.SLOObjective {
	if res == nil {
		return nil
	}
	var out []analysis.SLOObjective
	for _, o := range res.SLO.AllObjectives() {
		if slices.Contains(metrics, o.Metric) && o.MaxMS.OK() && o.MaxMS > 0 {
			out = append(out, o)
		}
	}
	return out
}

// sloLabel is an SLO line's legend entry, "SLO: TTFT p99 ≤ 2000 ms", then " (checked at
// p99)" for one checked at a higher percentile, then suffix.
func sloLabel(o analysis.SLOObjective, suffix string) string {
	t := "SLO: " + analysis.ObjectiveLabel(o.Name) + " ≤ " + fmtNum(float64(o.MaxMS)) + " ms"
	if _, pct, ok := strings.Cut(o.CheckedAs, "_"); ok {
		t += " (checked at " + pct + ")"
	}
	return t + suffix
}

// sloLines draws the line of each objective in objs, labelled by sloLabel with the suffix
// suffix(o) gives (nil: none).
func (b *builder) sloLines(objs []analysis.SLOObjective, suffix func(analysis.SLOObjective) string) {
	for _, o := range objs {
		s := ""
		if suffix != nil {
			s = suffix(o)
		}
		b.hline(float64(o.MaxMS), sloLabel(o, s), colGray, dotted)
	}
}

// withObjectiveSeries returns ss with, after it, the series of each objective's percentile
// ss does not draw ("TPOT p99" for tpot_p99), so that every SLO line has its series to be
// read against. A series is found by its name's start, the objective's label.
func withObjectiveSeries(ss []latencySeries, objs []analysis.SLOObjective) []latencySeries {
	out := slices.Clone(ss)
	for _, o := range objs {
		label := analysis.ObjectiveLabel(o.Name)
		if slices.ContainsFunc(out, func(s latencySeries) bool { return strings.HasPrefix(s.name, label) }) {
			continue
		}
		out = append(out, objectiveSeries(o, label))
	}
	return out
}

// objectiveSeries is the series of o's metric at o's percentile, styled by percentile (p50
// blue circles, p95 orange squares, p99 brown dashed triangles, apart from the red TTFT p95 of the
// latency-vs-throughput chart; ITL purple throughout).
func objectiveSeries(o analysis.SLOObjective, label string) latencySeries {
	styles := map[int]struct {
		c     color.Color
		dash  []vg.Length
		glyph draw.GlyphDrawer
	}{
		50: {colBlue, nil, draw.CircleGlyph{}},
		95: {colOrange, nil, draw.SquareGlyph{}},
		99: {colBrown, dashed, draw.TriangleGlyph{}},
	}
	st := styles[o.Percentile]
	if o.Metric == "itl" {
		st.c = colPurple
	}
	metric, pct := o.Metric, o.Percentile
	return latencySeries{label, st.c, st.dash, st.glyph, func(l *analysis.Level) analysis.Float {
		return l.LatencyOf(metric).Percentile(pct)
	}}
}

// tpotSLOSuffix says which metric a line of the TPOT and ITL chart is on, so that the other
// metric's series crossing it does not read as a breach: " (TPOT only; ITL has no SLO)".
func tpotSLOSuffix(objs []analysis.SLOObjective) func(analysis.SLOObjective) string {
	has := func(metric string) bool {
		return slices.ContainsFunc(objs, func(o analysis.SLOObjective) bool { return o.Metric == metric })
	}
	return func(o analysis.SLOObjective) string {
		self, other := strings.ToUpper(o.Metric), "ITL"
		if o.Metric == "itl" {
			other = "TPOT"
		}
		if has(strings.ToLower(other)) {
			return " (" + self + " only)"
		}
		return " (" + self + " only; " + other + " has no SLO)"
	}
}
