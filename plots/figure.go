package plots

import (
	"bufio"
	"bytes"
	"fmt"
	"image/color"
	"image/png"
	"io"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Figure is one chart: a plot with its legend in columns below the data area, outside it,
// so that no data, fit or SLO line crosses an entry (DESIGN §5.1).
type Figure struct {
	p *plot.Plot
	// kind is the title without the run's subtitle (the dashboard prints that once).
	kind    string
	entries []legendEntry
	// labels places the point labels, when the chart has them (nil otherwise).
	labels *labelPlacer
	// minLegend is the least height of the legend strip: the dashboard gives the figures of
	// a row the same, so that their x axes line up.
	minLegend vg.Length
}

// legendEntry is one line of a figure's legend.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// Text sizes, in points, of a chart rendered at Width × Height.
const (
	titleSize  = 12
	axisSize   = 10
	tickSize   = 9
	legendSize = 9
)

// PNGDPI is the PNG resolution: twice the 96 dpi gonum/plot assumes, so that a chart of
// 7 × 5 in is 1344 × 960 px with the layout of 672 × 480 (sharp on high-density screens). The
// layout does not depend on it. A variable for the command's tests, which render hundreds
// of charts under the race detector and check their files, not their pixels: they set it
// to vgimg.DefaultDPI, a quarter of the pixels (this package's golden tests keep 2 ×).
var PNGDPI = 2 * vgimg.DefaultDPI

// sans sets f to the embedded Liberation Sans, keeping its size.
func sans(f *font.Font) {
	f.Typeface, f.Variant = "Liberation", "Sans"
}

// sansStyle returns a text style in Liberation Sans of size pt and colour c.
func sansStyle(pt float64, c color.Color) text.Style {
	sty := text.Style{Color: c, Font: font.Font{Size: vg.Points(pt)}, Handler: plot.DefaultTextHandler}
	sans(&sty.Font)
	return sty
}

// useSans sets every text of p in Liberation Sans at the chart text sizes.
func useSans(p *plot.Plot) {
	p.Title.TextStyle.Font.Size = vg.Points(titleSize)
	for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		sans(f)
	}
	p.X.Label.TextStyle.Font.Size, p.Y.Label.TextStyle.Font.Size = vg.Points(axisSize), vg.Points(axisSize)
	p.X.Tick.Label.Font.Size, p.Y.Tick.Label.Font.Size = vg.Points(tickSize), vg.Points(tickSize)
}

// Legend layout.
var (
	legendThumb  = vg.Points(22)
	legendPad    = vg.Points(6)  // above and below the legend
	legendColGap = vg.Points(14) // between columns
)

// legendLayout splits entries into columns that fit width w: as many as fit (at most 3),
// filled top to bottom; h is the strip's height. In one column, an entry wider than textW
// (the room right of its thumbnail) continues on lines of its own (wrapEntries).
func legendLayout(entries []legendEntry, w, textW vg.Length) (cols [][]legendEntry, h vg.Length) {
	if len(entries) == 0 {
		return nil, 0
	}
	sty := sansStyle(legendSize, color.Black)
	var wText vg.Length
	for _, e := range entries {
		wText = max(wText, sty.Width(e.name))
	}
	colW := legendThumb + sty.Width(" ") + wText + legendColGap
	n := max(1, min(3, int(w/colW), len(entries)))
	if n == 1 && wText > textW {
		entries = wrapEntries(entries, sty, textW)
	}
	rows := (len(entries) + n - 1) / n
	for i := 0; i < len(entries); i += rows {
		cols = append(cols, entries[i:min(i+rows, len(entries))])
	}
	return cols, vg.Length(rows)*rowHeight(sty) + 2*legendPad
}

// layoutLegend is legendLayout of f's entries drawn in c: the strip spans c's width, its
// text the room from the data area's left edge, past the thumbnail, to c's right edge.
func (f *Figure) layoutLegend(c draw.Canvas) (cols [][]legendEntry, h vg.Length) {
	sty := sansStyle(legendSize, color.Black)
	textW := c.Max.X - f.p.DataCanvas(c).Min.X - legendThumb - sty.Width(" ")
	return legendLayout(f.entries, c.Size().X, textW)
}

// rowHeight is the height of one legend entry (text and spacing).
func rowHeight(sty text.Style) vg.Length { return sty.Height("Xg") * 1.25 }

// Draw draws the figure into c: the plot above, the legend strip below.
func (f *Figure) Draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	p := f.fitted(c)
	cols, h := f.layoutLegend(c)
	h = max(h, f.minLegend)
	pc := c
	pc.Min.Y += h
	p.Draw(pc)
	if len(cols) == 0 {
		return
	}
	// Columns start under the data area's left edge and share its width.
	dc := p.DataCanvas(pc)
	x0, w := dc.Min.X, c.Max.X-dc.Min.X
	colW := w / vg.Length(len(cols))
	sty := sansStyle(legendSize, color.Black)
	for i, col := range cols {
		l := plot.NewLegend()
		l.TextStyle, l.Top, l.Left, l.ThumbnailWidth = sty, true, true, legendThumb
		l.Padding = rowHeight(sty) - sty.Height("Xg")
		for _, e := range col {
			l.Add(e.name, e.thumbs...)
		}
		lc := draw.Crop(c, 0, 0, 0, 0)
		lc.Min.X, lc.Max.X = x0+vg.Length(i)*colW, x0+vg.Length(i+1)*colW
		lc.Min.Y, lc.Max.Y = c.Min.Y+legendPad, c.Min.Y+h-legendPad
		l.Draw(lc)
	}
}

// legendRect returns the rectangle the legend strip takes in c.
func (f *Figure) legendRect(c draw.Canvas) vg.Rectangle {
	_, h := f.layoutLegend(c)
	return vg.Rectangle{Min: c.Min, Max: vg.Point{X: c.Max.X, Y: c.Min.Y + max(h, f.minLegend)}}
}

// dataCanvas returns the canvas the plot's data are drawn in when f is drawn in c.
func (f *Figure) dataCanvas(c draw.Canvas) draw.Canvas {
	pc := c
	pc.Min.Y += f.legendRect(c).Size().Y
	return f.fitted(c).DataCanvas(pc)
}

// WriterTo renders the figure as an image of w × h in format "png" or "svg"; it
// implements Chart.
func (f *Figure) WriterTo(w, h vg.Length, format string) (io.WriterTo, error) {
	return render(w, h, format, f.Draw)
}

// Plot returns the figure's plot (axes, ranges, data).
func (f *Figure) Plot() *plot.Plot { return f.p }

// render draws with draw onto a new canvas of w × h in format: PNG at PNGDPI, SVG with a
// generic font fallback (svgFonts). gonum/plot panics on what it cannot draw (a value ≤ 0 on a
// log axis): that is an error of the one chart, not a crash of the sweep that measured it.
func render(w, h vg.Length, format string, drawTo func(draw.Canvas)) (out io.WriterTo, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("plots: the chart could not be drawn: %v", r)
		}
	}()
	switch format {
	case "png":
		c := vgimg.NewWith(vgimg.UseWH(w, h), vgimg.UseDPI(PNGDPI))
		drawTo(draw.New(c))
		return fastPNG{c}, nil
	case "svg":
		c := vgsvg.New(w, h)
		drawTo(draw.New(c))
		return svgFonts{c}, nil
	}
	return nil, fmt.Errorf("plots: unsupported format %q (png or svg)", format)
}

// fastPNG writes a canvas as PNG with zlib's fastest compression: the default level spent
// half of a run's chart time compressing (and, under the race detector, most of the cmd tests'
// time), for files about a third larger.
type fastPNG struct{ c *vgimg.Canvas }

// WriteTo implements io.WriterTo.
func (p fastPNG) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	bw := bufio.NewWriter(cw)
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(bw, p.c.Image()); err != nil {
		return cw.n, err
	}
	err := bw.Flush()
	return cw.n, err
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(b []byte) (int, error) {
	n, err := c.w.Write(b)
	c.n += int64(n)
	return n, err
}

// svgFonts writes an SVG whose font-family names a generic fallback after Liberation Sans
// (vgsvg writes the family alone), so that a browser without the font draws sans-serif text
// rather than its default serif.
type svgFonts struct{ c *vgsvg.Canvas }

// WriteTo implements io.WriterTo.
func (s svgFonts) WriteTo(w io.Writer) (int64, error) {
	var buf bytes.Buffer
	if _, err := s.c.WriteTo(&buf); err != nil {
		return 0, err
	}
	b := bytes.ReplaceAll(buf.Bytes(), []byte("font-family:Liberation Sans;"), []byte(svgFontFamily))
	n, err := w.Write(b)
	return int64(n), err
}

// svgFontFamily is the font-family every SVG text names.
const svgFontFamily = "font-family:'Liberation Sans',Arial,Helvetica,sans-serif;"

// beside draws a glyph dx to the right of the data point (x, y), so that it marks the point
// without hiding it or its error bar (the maximum TPS).
type beside struct {
	x, y  float64
	dx    vg.Length
	style draw.GlyphStyle
}

// Plot implements plot.Plotter.
func (m *beside) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	c.DrawGlyph(m.style, vg.Point{X: tx(m.x) + m.dx, Y: ty(m.y)})
}

// leftTriangle is a filled triangle pointing left, at the point it stands beside.
type leftTriangle struct{}

// DrawGlyph implements draw.GlyphDrawer.
func (leftTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetColor(sty.Color)
	r := sty.Radius
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X + r*0.8, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r*0.8, Y: pt.Y - r})
	p.Close()
	c.Fill(p)
}
