package plots

import (
	"fmt"
	"image/color"
	"io"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/record"
)

// sizeSpy is a Chart that records the sizes and formats it is rendered at, and writes them.
type sizeSpy struct{ got []string }

// WriterTo implements Chart.
func (s *sizeSpy) WriterTo(w, h vg.Length, format string) (io.WriterTo, error) {
	r := fmt.Sprintf("%s %gx%g", format, w.Points(), h.Points())
	s.got = append(s.got, r)
	return strings.NewReader(r), nil
}

// TestRenderFormats: renderFormats draws the chart it is given at its default size in every
// format, then — but for the dashboard — as SVG at its narrow size (the efficiency chart taller
// in proportion), the one chart each time, that File marked Narrow.
func TestRenderFormats(t *testing.T) {
	t.Parallel()
	at := func(format string, w, h vg.Length) string {
		return fmt.Sprintf("%s %gx%g", format, w.Points(), h.Points())
	}
	for _, tc := range []struct {
		name string
		w, h vg.Length
		want []string
	}{
		{"throughput", Width, Height, []string{at("png", Width, Height), at("svg", Width, Height),
			at("svg", NarrowWidth, NarrowHeight) + " narrow"}},
		{efficiencyName, Width, efficiencyHeight, []string{at("png", Width, efficiencyHeight), at("svg", Width, efficiencyHeight),
			at("svg", NarrowWidth, NarrowHeight*efficiencyHeight/Height) + " narrow"}},
		{"dashboard", dashboardWidth, dashboardHeight, []string{at("png", dashboardWidth, dashboardHeight), at("svg", dashboardWidth, dashboardHeight)}},
	} {
		c := &sizeSpy{}
		files, err := renderFormats(tc.name, c, tc.w, tc.h)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for i, f := range files {
			d := string(f.Data)
			if f.Format+" " != d[:len(f.Format)+1] || f.Name != tc.name || d != c.got[i] {
				t.Errorf("%s: file %d is %s %q, drawn %q", tc.name, i, f.FileName(), d, c.got[i])
			}
			if f.Narrow {
				d += " narrow"
			}
			got = append(got, d)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("%s: rendered %q, want %q", tc.name, got, tc.want)
		}
	}
}

// checkViewBox fails unless f is an SVG whose viewBox is its chart's narrow size.
func checkViewBox(t *testing.T, f File) {
	t.Helper()
	checkSVG(t, f.Data)
	w, h := narrowSize(f.Name)
	if want := fmt.Sprintf(`viewBox="0 0 %g %g"`, w.Points(), h.Points()); f.Format != "svg" || !strings.Contains(string(f.Data), want) {
		t.Errorf("%s.%s: no %s", f.Name, f.Format, want)
	}
}

// longModel is a model name wider, in the 12 pt title, than the 288 pt of a narrow chart: it
// has no space, and breaks after its "/" and "-".
const longModel = "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic"

// withModel returns res with its model called model.
func withModel(res *analysis.Result, model string) *analysis.Result {
	res.Meta.Model = model
	return res
}

// narrowChart is a chart report.html, compare.html or a grid's report.html shows at its
// narrow size, and its base name (which sets that size, narrowSize).
type narrowChart struct {
	c    Chart
	name string
}

// narrowCharts returns the charts shown at the narrow size, by a name for errors: every chart
// but the dashboard that RenderAll renders for a closed-loop, an arrival-rate, an energy and an
// embeddings run and for a run of longModel (in the title), the overlays and the Pareto chart,
// also of runs labelled longModel (in their legends).
func narrowCharts(t *testing.T) map[string]narrowChart {
	t.Helper()
	emb := analysistest.Saturating()
	emb.Meta.API = record.APIEmbeddings
	charts := map[string]narrowChart{}
	for _, res := range []*analysis.Result{analysistest.Saturating(), analysistest.Rate(), analysistest.WithEnergy(),
		analysistest.RateWithEnergy(), emb, withModel(analysistest.Saturating(), longModel)} {
		for _, name := range chartsOf(res) {
			if name == "dashboard" || (res.Energy != nil && name != efficiencyName) { // the rest checked without energy
				continue
			}
			c, err := Build(name, res)
			if err != nil {
				t.Fatal(err)
			}
			charts[fmt.Sprintf("%s/%s/%v/%s", res.Meta.Model, res.Meta.API, res.Energy != nil, name)] = narrowChart{c, name}
		}
	}
	for name, c := range compareCharts(t) {
		charts[name] = narrowChart{c, name}
	}
	long := []*analysis.Result{withModel(analysistest.Saturating(), longModel), withModel(analysistest.TwentyLevels(), longModel)}
	longLabels := []string{longModel, longModel + "-v2"}
	for name, build := range map[string]func([]*analysis.Result, []string) (*Figure, error){
		"compare_throughput": CompareThroughput, "compare_latency": CompareLatency} {
		f, err := build(long, longLabels)
		if err != nil {
			t.Fatal(err)
		}
		charts["long/"+name] = narrowChart{f, name}
	}
	runs := []*analysis.Result{analysistest.Saturating(), slower(analysistest.Saturating(), 0.5, 2), analysistest.TwentyLevels()}
	for name, labels := range map[string][]string{"pareto": {"512-128", "2048-256", "128-1024"},
		"long/pareto": {longModel, longModel + "-v2", longModel + "-v3"}} {
		p, err := pareto(runs, labels, 1)
		if err != nil {
			t.Fatal(err)
		}
		charts[name] = narrowChart{p, ParetoName}
	}
	return charts
}

// TestNarrowChartsFit lays every chart of report.html and compare.html out at its narrow size
// and checks that nothing reaches past the image: each title line fits the width (the
// subtitle breaks at " · ", a model name at "/" and "-"), each legend line the room beside its
// thumbnail (a long entry continues on lines of its own), the legend leaves the data area at
// least half the height, and the point labels stay inside the data area, apart. The two
// panels of the efficiency chart are checked each in its tile, under the grid's subtitle.
func TestNarrowChartsFit(t *testing.T) {
	t.Parallel()
	for key, nc := range narrowCharts(t) {
		w, h := narrowSize(nc.name)
		c := draw.New(vgsvg.New(w, h))
		switch ch := nc.c.(type) {
		case *Figure:
			checkNarrowFigure(t, key, ch, c)
		case *Grid:
			sub, sty, cells := ch.layout(c)
			for _, line := range strings.Split(sub, "\n") {
				if lw := sty.Width(line); lw > w-2*ch.Pad {
					t.Errorf("%s: subtitle line %q is %.0f pt, wider than the %.0f pt between the margins", key, line, lw.Points(), (w - 2*ch.Pad).Points())
				}
			}
			for i, row := range ch.Figures {
				for j, f := range row {
					checkNarrowFigure(t, fmt.Sprintf("%s[%d][%d]", key, i, j), f, cells[i][j])
				}
			}
		default:
			t.Fatalf("%s: a %T", key, ch)
		}
	}
}

// checkNarrowFigure checks the layout of f drawn in c (TestNarrowChartsFit).
func checkNarrowFigure(t *testing.T, name string, f *Figure, c draw.Canvas) {
	t.Helper()
	p := f.fitted(c)
	room := c.Size().X - 2*p.Title.Padding
	for _, line := range strings.Split(p.Title.Text, "\n") {
		if w := p.Title.TextStyle.Width(line); w > room {
			t.Errorf("%s: title line %q is %.0f pt, wider than the %.0f pt between the margins", name, line, w.Points(), room.Points())
		}
	}
	sty := sansStyle(legendSize, color.Black)
	textW := c.Max.X - f.p.DataCanvas(c).Min.X - legendThumb - sty.Width(" ")
	cols, h := f.layoutLegend(c)
	for _, col := range cols {
		for _, e := range col {
			if w := sty.Width(e.name); w > textW {
				t.Errorf("%s: legend line %q is %.0f pt, wider than the %.0f pt beside its thumbnail", name, e.name, w.Points(), textW.Points())
			}
		}
	}
	if h > c.Size().Y/2 {
		t.Errorf("%s: legend %.0f pt high, more than half of %.0f pt", name, h.Points(), c.Size().Y.Points())
	}
	if f.labels != nil {
		f.Draw(c)
		checkPlaced(t, name, f, f.dataCanvas(c))
	}
}

// TestWrapTitle: a title that fits is kept; a subtitle too wide breaks at " · ", as many
// parts a line as fit; a part wider than the room stays whole.
func TestWrapTitle(t *testing.T) {
	t.Parallel()
	sty := sansStyle(titleSize, color.Black)
	title := "Output throughput\nmeta-llama/Llama-3.1-8B-Instruct · http://127.0.0.1:8000/v1 · 2025-03-14 09:26 UTC"
	if got := wrapTitle(title, sty, Width); got != title {
		t.Errorf("at %v pt: %q, want it kept", Width.Points(), got)
	}
	room := sty.Width("http://127.0.0.1:8000/v1 · 2025-03-14 09:26 UTC") + vg.Points(1)
	want := "Output throughput\nmeta-llama/Llama-3.1-8B-Instruct\nhttp://127.0.0.1:8000/v1 · 2025-03-14 09:26 UTC"
	if got := wrapTitle(title, sty, room); got != want {
		t.Errorf("at %.0f pt: %q, want %q", room.Points(), got, want)
	}
	long := "Output throughput\n" + longModel + " · 2025-03-14 09:26 UTC"
	room = sty.Width("neuralmagic/Meta-Llama-3.1-70B-") + vg.Points(1)
	want = "Output throughput\nneuralmagic/Meta-Llama-3.1-70B-\nInstruct-FP8-dynamic\n2025-03-14 09:26 UTC"
	if got := wrapTitle(long, sty, room); got != want {
		t.Errorf("a long model at %.0f pt: %q, want %q", room.Points(), got, want)
	}
	room = sty.Width("abcdef") + vg.Points(1)
	if got, want := wrapTitle("abcdefghijklm", sty, room), "abcdef\nghijkl\nm"; got != want {
		t.Errorf("a word without a break at %.0f pt: %q, want %q", room.Points(), got, want)
	}
}

// TestWrapEntries: a legend entry too wide breaks at spaces, a word too wide after "/" and "-",
// and each further line is an entry without thumbnails.
func TestWrapEntries(t *testing.T) {
	t.Parallel()
	sty := sansStyle(legendSize, color.Black)
	thumb := &plotter.Line{}
	room := sty.Width("neuralmagic/Meta-Llama-3.1-") + vg.Points(1)
	got := wrapEntries([]legendEntry{{name: longModel + " E2E p95", thumbs: []plot.Thumbnailer{thumb}}}, sty, room)
	want := []string{"neuralmagic/Meta-Llama-3.1-", "70B-Instruct-FP8-dynamic", "E2E p95"}
	var names []string
	for i, e := range got {
		names = append(names, e.name)
		if (len(e.thumbs) > 0) != (i == 0) {
			t.Errorf("line %d %q has %d thumbnails", i, e.name, len(e.thumbs))
		}
	}
	if !slices.Equal(names, want) {
		t.Errorf("at %.0f pt: %q, want %q", room.Points(), names, want)
	}
}

// titleSpy is a plotter that records, when drawn, its figure's own title and that of the plot
// it is drawn in.
type titleSpy struct {
	f          *Figure
	own, drawn string
}

// Plot implements plot.Plotter.
func (s *titleSpy) Plot(_ draw.Canvas, p *plot.Plot) { s.own, s.drawn = s.f.p.Title.Text, p.Title.Text }

// TestFittedTitleLeavesFigure: a chart drawn narrow draws its title broken to the width, and
// the figure's own title stays as it is while it is drawn, not only after: nothing a drawing
// does to fit one size is shared with the next.
func TestFittedTitleLeavesFigure(t *testing.T) {
	t.Parallel()
	c, err := Build("throughput", withModel(analysistest.Saturating(), longModel))
	if err != nil {
		t.Fatal(err)
	}
	f := c.(*Figure)
	title := f.p.Title.Text
	spy := &titleSpy{f: f}
	f.p.Add(spy)
	if _, err := Render(f, NarrowWidth, NarrowHeight, "svg"); err != nil {
		t.Fatal(err)
	}
	if spy.own != title || f.p.Title.Text != title {
		t.Errorf("the figure's title was %q while drawn, %q after; want %q throughout", spy.own, f.p.Title.Text, title)
	}
	if want := wrapTitle(title, f.p.Title.TextStyle, NarrowWidth-2*f.p.Title.Padding); spy.drawn != want || want == title {
		t.Errorf("drawn with the title %q, want it broken to the width: %q", spy.drawn, want)
	}
}
