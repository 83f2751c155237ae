package plots

import (
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestZeroLatencyOnSpanningData: a level whose latencies are 0 beside others more than 100×
// apart (as a busy run gave in TestSecretsNeverWritten) keeps the latency charts on a linear
// axis, since a log axis cannot place 0: every chart renders. Before, gonum/plot panicked
// ("Values must be greater than 0 for a log scale") and took the sweep down with it.
func TestZeroLatencyOnSpanningData(t *testing.T) {
	t.Parallel()
	res := analysistest.Saturating()
	for i := range res.Levels {
		l := &res.Levels[i]
		l.TTFT.P50, l.TTFT.P95, l.TTFT.P99 = l.TTFT.P50*1000, l.TTFT.P95*1000, l.TTFT.P99*1000
		l.E2E.P50, l.E2E.P95 = l.E2E.P50*1000, l.E2E.P95*1000
	}
	l := &res.Levels[0]
	l.TTFT.P50, l.TTFT.P95, l.TTFT.P99, l.E2E.P50, l.E2E.P95 = 0, 0, 0, 0, 0
	// SVG draws every axis, tick and point as PNG does, without rasterizing: the panic came
	// from the axis, so one format shows it (a PNG of every chart took 14 s under -race).
	for _, name := range chartsOf(res) {
		c, err := Build(name, res)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, err := Render(c, Width, Height, "svg"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestRenderRecovers: a drawing that panics (as gonum/plot does on what it cannot draw) is an
// error of its chart, not a crash.
func TestRenderRecovers(t *testing.T) {
	_, err := render(100, 100, "svg", func(draw.Canvas) { panic("Values must be greater than 0 for a log scale.") })
	if err == nil || !strings.Contains(err.Error(), "could not be drawn: Values must be greater than 0") {
		t.Fatalf("render of a panicking drawing: %v, want an error naming the panic", err)
	}
}
