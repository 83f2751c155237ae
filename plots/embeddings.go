package plots

import (
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// An embeddings run (analysis.Result.Whole, DESIGN §4.17) is charted by the input tokens/s
// its answers embedded and their latency: its throughput charts name input tokens, a latency
// chart takes the place of the TTFT and TPOT charts, and no series of TTFT is drawn.

// wholeNames are the charts RenderAll renders for an embeddings run (closed loop), in order.
var wholeNames = []string{"throughput", "latency", "latency_vs_throughput", "qps", "dashboard"}

// chartTPS is the throughput a run's charts draw: a level's tokens/s, its 95% CI half-width,
// the tokens it counts ("output", "input") and its chart's title.
type chartTPS struct {
	tps, ci       func(*analysis.Level) analysis.Float
	tokens, title string
}

// tpsOf returns the throughput res's charts draw: output tokens/s, or an embeddings run's
// input tokens/s (nil res: output).
func tpsOf(res *analysis.Result) chartTPS {
	if res == nil || !res.Whole() {
		return chartTPS{outputTPS, func(l *analysis.Level) analysis.Float { return l.OutputTPSCI95 }, "output", "Output throughput"}
	}
	return chartTPS{res.TPS, res.TPSCI95, "input", "Input throughput"}
}

// whole reports an embeddings run (nil res: no).
func whole(res *analysis.Result) bool { return res != nil && res.Whole() }

// latency draws an embeddings run's latency (request to whole answer) p50, p95 and p99
// against concurrency (log2 axis), each E2E SLO, and the latency blow-up, as ttft draws a
// stream's TTFT.
func latency(res *analysis.Result) (*Figure, error) {
	return plotOf(percentileChart(res, "Latency", "latency", "e2e", func(l *analysis.Level) analysis.Latency { return l.E2E }))
}

// latencyDashboard is the 2×2 grid of an embeddings run: throughput, latency, request
// throughput and latency against throughput.
func latencyDashboard(res *analysis.Result) (*Grid, error) {
	return dashboard(res, throughput, latency, qps, latencyVsThroughput)
}

// percentileSeries are the p50, p95 and p99 series of the latency of (name, of).
func percentileSeries(name string, of func(*analysis.Level) analysis.Latency) []latencySeries {
	return []latencySeries{
		{name + " p50", colBlue, nil, draw.CircleGlyph{}, func(l *analysis.Level) analysis.Float { return of(l).P50 }},
		{name + " p95", colOrange, nil, draw.SquareGlyph{}, func(l *analysis.Level) analysis.Float { return of(l).P95 }},
		{name + " p99", colRed, dashed, draw.TriangleGlyph{}, func(l *analysis.Level) analysis.Float { return of(l).P99 }},
	}
}
