package plots

import (
	"bytes"
	"fmt"
	"image/color"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestRenderNarrow: RenderAll, RenderCompare and RenderPareto follow each chart's PNG and SVG
// with its narrow SVG, marked Narrow, at NarrowWidth × NarrowHeight (the efficiency chart
// taller in proportion) — every chart's but the dashboard's; SVGs keys the SVGs by name and the
// narrow ones by name + the suffix it is given, and leaves the PNGs out.
func TestRenderNarrow(t *testing.T) {
	t.Parallel()
	res := analysistest.RateWithEnergy() // a dashboard left out, the efficiency chart taller
	all, err := RenderAll(res)
	if err != nil {
		t.Fatal(err)
	}
	runs, labels := []*analysis.Result{analysistest.Saturating(), analysistest.TwentyLevels()}, []string{"h100", "a100"}
	cmp, err := RenderCompare(runs, labels)
	if err != nil {
		t.Fatal(err)
	}
	par, err := RenderPareto(runs, labels, 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []struct {
		files []File
		names []string
	}{{all, chartsOf(res)}, {cmp, compareNames()}, {par, []string{ParetoName}}} {
		var got, want []string
		for _, n := range set.names {
			want = append(want, n+".png", n+".svg")
			if n != "dashboard" {
				want = append(want, n+" narrow")
			}
		}
		svgs := SVGs(set.files, "~n")
		for _, f := range set.files {
			name, key := f.FileName(), f.Name
			if f.Narrow {
				name, key = f.Name+" narrow", f.Name+"~n"
				checkViewBox(t, f)
			}
			got = append(got, name)
			if b, ok := svgs[key]; f.Format == "svg" && (!ok || !bytes.Equal(b, f.Data)) {
				t.Errorf("SVGs[%q] is not %s", key, name)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("rendered %v, want %v", got, want)
		}
		if n := len(want) - len(set.names); len(svgs) != n {
			t.Errorf("SVGs holds %d renderings, want the %d SVGs", len(svgs), n)
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

// TestNarrowChartsFit lays every chart of report.html and compare.html out at its narrow size
// and checks that nothing reaches past the image: each title line fits the width (the
// subtitle breaks at " · "), each legend line the room beside its thumbnail (a long entry
// continues on lines of its own), the legend leaves the data area at least half the height,
// and the point labels stay inside the data area, apart.
func TestNarrowChartsFit(t *testing.T) {
	t.Parallel()
	figs := map[string]*Figure{}
	for _, res := range []*analysis.Result{analysistest.Saturating(), analysistest.Rate()} {
		for _, name := range NamesFor(res.Mode) {
			if name == "dashboard" {
				continue
			}
			c, err := Build(name, res)
			if err != nil {
				t.Fatal(err)
			}
			figs[res.Meta.Name+"/"+name] = c.(*Figure)
		}
	}
	for name, c := range compareCharts(t) {
		figs[name] = c.(*Figure)
	}
	runs := []*analysis.Result{analysistest.Saturating(), slower(analysistest.Saturating(), 0.5, 2), analysistest.TwentyLevels()}
	p, err := pareto(runs, []string{"512-128", "2048-256", "128-1024"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	figs["pareto"] = p
	for name, f := range figs {
		c := draw.New(vgsvg.New(NarrowWidth, NarrowHeight))
		restore := f.fitTitle(c)
		room := NarrowWidth - 2*f.p.Title.Padding
		for _, line := range strings.Split(f.p.Title.Text, "\n") {
			if w := f.p.Title.TextStyle.Width(line); w > room {
				t.Errorf("%s: title line %q is %.0f pt, wider than the %.0f pt between the margins", name, line, w.Points(), room.Points())
			}
		}
		restore()
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
		if h > NarrowHeight/2 {
			t.Errorf("%s: legend %.0f pt high, more than half of %.0f pt", name, h.Points(), NarrowHeight.Points())
		}
		if f.labels != nil {
			checkLabels(t, name, f, NarrowWidth, NarrowHeight)
		}
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
	if got := wrapTitle("a-very-long-model-name", sty, vg.Points(10)); got != "a-very-long-model-name" {
		t.Errorf("an unbreakable line became %q", got)
	}
}
