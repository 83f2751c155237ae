package plots

import (
	"fmt"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// Grid is a row-major grid of plots drawn into one image, with their data areas aligned
// (plot.Align).
type Grid struct {
	// Plots holds the rows; every row has the same number of plots.
	Plots [][]*plot.Plot
	// Pad is the space between and around tiles.
	Pad vg.Length
}

// WriterTo renders the grid as an image of w × h in format "png" or "svg"; it implements Chart.
func (g *Grid) WriterTo(w, h vg.Length, format string) (io.WriterTo, error) {
	if len(g.Plots) == 0 || len(g.Plots[0]) == 0 {
		return nil, fmt.Errorf("plots: grid: no plots")
	}
	cols := len(g.Plots[0])
	for i, row := range g.Plots {
		if len(row) != cols {
			return nil, fmt.Errorf("plots: grid: row %d has %d plots, want %d", i, len(row), cols)
		}
	}
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return nil, fmt.Errorf("plots: grid: %w", err)
	}
	t := draw.Tiles{Rows: len(g.Plots), Cols: cols,
		PadTop: g.Pad, PadBottom: g.Pad, PadLeft: g.Pad, PadRight: g.Pad, PadX: 2 * g.Pad, PadY: 2 * g.Pad}
	canvases := plot.Align(g.Plots, t, draw.New(c))
	for i, row := range g.Plots {
		for j, p := range row {
			p.Draw(canvases[i][j])
		}
	}
	return c, nil
}

// Dashboard is the 2×2 grid of Throughput, TTFT, TPOT and LatencyVsThroughput, meant for
// DashboardWidth × DashboardHeight.
func Dashboard(res *analysis.Result) (*Grid, error) {
	var ps []*plot.Plot
	for _, f := range []func(*analysis.Result) (*plot.Plot, error){Throughput, TTFT, TPOT, LatencyVsThroughput} {
		p, err := f(res)
		if err != nil {
			return nil, fmt.Errorf("plots: dashboard: %w", err)
		}
		ps = append(ps, p)
	}
	return &Grid{Plots: [][]*plot.Plot{{ps[0], ps[1]}, {ps[2], ps[3]}}, Pad: vg.Points(6)}, nil
}
