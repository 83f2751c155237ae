package plots

import (
	"fmt"
	"image/color"
	"io"

	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// Grid is a row-major grid of figures drawn into one image under one subtitle.
type Grid struct {
	// Figures holds the rows; every row has the same number of figures.
	Figures [][]*Figure
	// Subtitle names the run (model, endpoint, date) once, above the grid; each figure's
	// title is its kind alone.
	Subtitle string
	// Pad is the space between and around tiles.
	Pad vg.Length
}

// WriterTo renders the grid as an image of w × h in format "png" or "svg"; it implements Chart.
func (g *Grid) WriterTo(w, h vg.Length, format string) (io.WriterTo, error) {
	if len(g.Figures) == 0 || len(g.Figures[0]) == 0 {
		return nil, fmt.Errorf("plots: grid: no figures")
	}
	for i, row := range g.Figures {
		if len(row) != len(g.Figures[0]) {
			return nil, fmt.Errorf("plots: grid: row %d has %d figures, want %d", i, len(row), len(g.Figures[0]))
		}
	}
	return render(w, h, format, g.Draw)
}

// Draw draws the subtitle and the figures into c.
func (g *Grid) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	sub, sty, cells := g.layout(c)
	if sub != "" {
		c.FillText(sty, vg.Point{X: c.Center().X, Y: c.Max.Y - g.Pad}, sub)
	}
	for i, row := range g.Figures {
		// The tallest legend of the row sets every one's, so the row's x axes line up.
		var h vg.Length
		for j, f := range row {
			_, fh := f.layoutLegend(cells[i][j])
			h = max(h, fh)
		}
		for j, f := range row {
			f.minLegend = h
			f.Draw(cells[i][j])
		}
	}
}

// layout returns the subtitle as drawn in c (broken to its width, wrapTitle), its style, and
// the canvas of each figure below it, by row.
func (g *Grid) layout(c draw.Canvas) (sub string, sty text.Style, cells [][]draw.Canvas) {
	if g.Subtitle != "" {
		sty = sansStyle(titleSize, color.Black)
		sty.XAlign, sty.YAlign = text.XCenter, text.YTop
		sub = wrapTitle(g.Subtitle, sty, c.Size().X-2*g.Pad)
		c.Max.Y -= sty.Height(sub) + 2*g.Pad
	}
	t := draw.Tiles{Rows: len(g.Figures), Cols: len(g.Figures[0]),
		PadTop: g.Pad, PadBottom: g.Pad, PadLeft: g.Pad, PadRight: g.Pad, PadX: 2 * g.Pad, PadY: 2 * g.Pad}
	for i, row := range g.Figures {
		cells = append(cells, nil)
		for j := range row {
			cells[i] = append(cells[i], t.At(c, j, i))
		}
	}
	return sub, sty, cells
}

// dashboard lays out four figures 2 × 2 under res's subtitle, each titled by its kind.
func dashboard(res *analysis.Result, charts ...func(*analysis.Result) (*Figure, error)) (*Grid, error) {
	var fs []*Figure
	for _, f := range charts {
		fig, err := f(res)
		if err != nil {
			return nil, fmt.Errorf("plots: dashboard: %w", err)
		}
		fig.p.Title.Text = fig.kind
		fs = append(fs, fig)
	}
	return &Grid{Figures: [][]*Figure{{fs[0], fs[1]}, {fs[2], fs[3]}}, Subtitle: subtitle(meta(res)), Pad: vg.Points(6)}, nil
}

// Dashboard is the 2×2 grid of Throughput, TTFT, TPOT and latencyVsThroughput, meant for
// dashboardWidth × dashboardHeight.
func Dashboard(res *analysis.Result) (*Grid, error) {
	return dashboard(res, throughput, ttft, tpot, latencyVsThroughput)
}
