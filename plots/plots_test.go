package plots

import (
	"bytes"
	"encoding/xml"
	"errors"
	"flag"
	"image"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// Small sizes keep the rendering tests fast.
const (
	testW = 4 * vg.Inch
	testH = 2.6 * vg.Inch
)

// checkSVG parses b as XML to the end and reports the root element's name.
func checkSVG(t *testing.T, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("svg does not parse: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok && root == "" {
			root = se.Name.Local
		}
	}
	if root != "svg" {
		t.Fatalf("svg root element = %q, want svg", root)
	}
}

func TestChartsRenderEveryFixture(t *testing.T) {
	for _, f := range analysistest.Fixtures() {
		for _, name := range Names() {
			t.Run(f.Name+"/"+name, func(t *testing.T) {
				c, err := Build(name, f.Result())
				if err != nil {
					t.Fatalf("build: %v", err)
				}
				w, h := testW, testH
				if name == "dashboard" {
					w, h = 2*testW, 2*testH
				}
				svg, err := Render(c, w, h, "svg")
				if err != nil {
					t.Fatalf("svg: %v", err)
				}
				checkSVG(t, svg)
				if f.Name == "Saturating" || f.Name == "no_data" || f.Name == "huge_range" {
					b, err := Render(c, w, h, "png")
					if err != nil {
						t.Fatalf("png: %v", err)
					}
					img, err := png.Decode(bytes.NewReader(b))
					if err != nil {
						t.Fatalf("png decode: %v", err)
					}
					if got, want := img.Bounds().Dx(), int(math.Round(w.Dots(96))); got != want {
						t.Errorf("png width = %d px, want %d", got, want)
					}
				}
			})
		}
	}
}

func TestChartContent(t *testing.T) {
	res := analysistest.Saturating()
	cases := []struct {
		chart string
		want  []string
	}{
		// Title names model, endpoint and date; legend the fit, knee, interval, max and SLO.
		{"throughput", []string{"Output throughput", "meta-llama/Llama-3.1-8B-Instruct", "http://127.0.0.1:8000/v1",
			"2025-03-14 09:26 UTC", "USL fit (R²=0.991)", "batch fit (R²=0.995)", "knee N≈32.6 (batch, plateau onset)", "knee 95% interval [31.8, 33.5]",
			"efficient point N≈25.0 (next doubling < +10%)",
			"max 2667 tok/s @ N=32", "SLO limit N≈45.3", "hollow: excluded level", "output throughput (tokens/s)", "log2 scale"}},
		{"ttft", []string{"TTFT p50", "TTFT p95", "TTFT p99", "SLO: TTFT p95 ≤ 2000 ms", "TTFT blow-up N≈33.1 (hinge)", "TTFT (ms)"}},
		{"tpot", []string{"TPOT p50", "TPOT p95", "ITL p99", "SLO: TPOT p95 ≤ 50.0 ms"}},
		{"latency_vs_throughput", []string{"E2E p50", "E2E p95", "N=32", "N=128", "operating point N=32", "knee 2683 tok/s (N≈32.6)"}},
		{"qps", []string{"QPS (completed)", "goodput QPS", "requests/s"}},
	}
	for _, tc := range cases {
		c, err := Build(tc.chart, res)
		if err != nil {
			t.Fatal(err)
		}
		svg, err := Render(c, testW, testH, "svg")
		if err != nil {
			t.Fatal(err)
		}
		s := string(svg)
		for _, w := range tc.want {
			if !strings.Contains(s, xmlEscape(w)) {
				t.Errorf("%s: svg lacks %q", tc.chart, w)
			}
		}
	}
}

// TestThroughputMarksAddedLevels: a level added after the planned ones (sweep.refine) is
// ringed and named in the legend; a sweep without added levels has neither.
func TestThroughputMarksAddedLevels(t *testing.T) {
	const legend = "level added after the planned ones (sweep.refine)"
	res := analysistest.Saturating()
	if s := throughputSVG(t, res); strings.Contains(s, legend) {
		t.Error("no level was added, but the legend names one")
	}
	res.Levels[3].Refine = "knee ≈ 7.5 lies between levels 4 and 16"
	if s := throughputSVG(t, res); !strings.Contains(s, legend) {
		t.Error("the added level is not named in the legend")
	}
}

// TestThroughputDrawsHeadlineModel checks that the curve the headline knee was read from is
// drawn when it is not the USL, beside the USL curve.
func TestThroughputDrawsHeadlineModel(t *testing.T) {
	res := analysistest.Saturating()
	// The demo engine's step model (DESIGN §6): α = 4 ms, β = 0.25 ms, S = 32.
	res.Throughput.Batch = &analysis.Batch{Alpha: 0.004, Beta: 0.00025, Limit: 32, PlateauTPS: 2667, R2: 0.998}
	res.Knee.Method = analysis.MethodBatch
	for method, want := range map[analysis.Method]string{analysis.MethodBatch: "batch fit (R²=0.998)", analysis.MethodHinge: "hinge fit (R²=0.980)", analysis.MethodUSL: ""} {
		res.Knee.Method = method
		s := throughputSVG(t, res)
		if want != "" && !strings.Contains(s, xmlEscape(want)) {
			t.Errorf("%s headline: svg lacks %q", method, want)
		}
		if !strings.Contains(s, xmlEscape("USL fit (R²=0.991)")) {
			t.Errorf("%s headline: the USL curve is missing", method)
		}
		if method == analysis.MethodUSL && strings.Contains(s, " fit (R²=0.98") {
			t.Errorf("usl headline: another model's curve is drawn")
		}
	}
}

// TestThroughputSLOBeyond: when every valid level meets the SLOs, analysis sets
// slo.max_concurrency to the largest valid level and leaves slo.limit empty. The chart said
// "SLO limit N≈64.0" there, a limit that was never found; it now says the SLO holds up to the
// last level. A binding SLO keeps its "SLO limit" line.
func TestThroughputSLOBeyond(t *testing.T) {
	res := analysistest.Saturating()
	res.SLO.MaxConcurrency, res.SLO.TPS, res.SLO.Limit = 64, 2667, ""
	for _, name := range []string{"throughput", "dashboard"} {
		c, err := Build(name, res)
		if err != nil {
			t.Fatal(err)
		}
		svg, err := Render(c, 2*testW, 2*testH, "svg")
		if err != nil {
			t.Fatal(err)
		}
		s := string(svg)
		if want := "SLO met up to the last level (≥ 64)"; !strings.Contains(s, xmlEscape(want)) {
			t.Errorf("%s: svg lacks %q", name, want)
		}
		if strings.Contains(s, "SLO limit") {
			t.Errorf("%s: svg names an SLO limit, but every level meets the SLO", name)
		}
	}
	res.SLO.Limit = "tpot_p95"
	if s := throughputSVG(t, res); !strings.Contains(s, xmlEscape("SLO limit N≈64")) || strings.Contains(s, "last level") {
		t.Errorf("binding SLO: want the \"SLO limit N≈64\" line only")
	}
}

func xmlEscape(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}

// TestLegendClearOfData lays each chart out at its file size and checks that no data point
// (points, CI bar ends, SLO lines) falls inside the legend box drawn at the top left.
func TestLegendClearOfData(t *testing.T) {
	charts := map[string]func(*analysis.Result) (*builder, error){
		"throughput": throughputChart, "ttft": ttftChart, "tpot": tpotChart,
		"latency_vs_throughput": latencyVsThroughputChart, "qps": qpsChart,
	}
	for _, f := range analysistest.Fixtures() {
		for name, build := range charts {
			b, err := build(f.Result())
			if err != nil {
				t.Fatal(err)
			}
			checkLegendClear(t, f.Name+"/"+name, b)
		}
	}
	p, err := Throughput(analysistest.Saturating())
	if err != nil {
		t.Fatal(err)
	}
	if p.Y.Min != 0 {
		t.Errorf("throughput y axis starts at %g, want 0", p.Y.Min)
	}
}

// checkLegendClear fails when a tracked point of b, laid out at Width × Height, lies inside
// the legend box at the top left.
func checkLegendClear(t *testing.T, name string, b *builder) {
	t.Helper()
	if b.empty || len(b.legends) == 0 {
		return
	}
	dc := draw.New(vgimg.New(Width, Height))
	dataC := b.p.DataCanvas(dc)
	var w, h vg.Length
	for _, s := range b.legends {
		w = max(w, b.p.Legend.ThumbnailWidth+b.p.Legend.TextStyle.Width(" "+s))
		h += b.p.Legend.TextStyle.Height(s)
	}
	box := vg.Rectangle{
		Min: vg.Point{X: dataC.Min.X + b.p.Legend.XOffs, Y: dataC.Max.Y + b.p.Legend.YOffs - h},
		Max: vg.Point{X: dataC.Min.X + b.p.Legend.XOffs + w, Y: dataC.Max.Y + b.p.Legend.YOffs},
	}
	tx, ty := b.p.Transforms(&dataC)
	for i := range b.xs {
		x, y := b.xs[i], b.ys[i]
		if !finite(x) || !finite(y) || b.logY && y <= 0 || b.logX && x <= 0 {
			continue
		}
		px, py := tx(x), ty(y)
		if px > box.Min.X+2 && px < box.Max.X-2 && py > box.Min.Y+2 && py < box.Max.Y-2 {
			t.Errorf("%s: point (%g, %g) at (%.0f, %.0f) pt is under the legend %v", name, x, y, px, py, box)
		}
	}
}

func TestDeterministicSVG(t *testing.T) {
	a, err := Render(mustBuild(t, "dashboard"), 2*testW, 2*testH, "svg")
	if err != nil {
		t.Fatal(err)
	}
	b, err := Render(mustBuild(t, "dashboard"), 2*testW, 2*testH, "svg")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two renderings of the same result differ")
	}
}

func mustBuild(t *testing.T, name string) Chart {
	t.Helper()
	c, err := Build(name, analysistest.Saturating())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestGolden compares the saturating fixture's charts with testdata/golden: SVG as text, PNG
// pixel by pixel with a tolerance (anti-aliasing may differ across platforms). Regenerate
// with `go test ./plots -update` and look at the images before committing them.
func TestGolden(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			c := mustBuild(t, name)
			w, h := testW, testH
			if name == "dashboard" {
				w, h = 2*testW, 2*testH
			}
			for _, format := range []string{"svg", "png"} {
				got, err := Render(c, w, h, format)
				if err != nil {
					t.Fatal(err)
				}
				checkGolden(t, filepath.Join("testdata", "golden", name+"."+format), got, format)
			}
		})
	}
}

// pngDiff returns the fraction of pixels whose colour differs by more than 48/255 in any
// channel; a size mismatch is a failure.
func pngDiff(t *testing.T, a, b []byte) float64 {
	t.Helper()
	ia, err := png.Decode(bytes.NewReader(a))
	if err != nil {
		t.Fatal(err)
	}
	ib, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if ia.Bounds() != ib.Bounds() {
		t.Fatalf("png size %v, golden %v", ia.Bounds(), ib.Bounds())
	}
	bad, n := 0, 0
	r := ia.Bounds()
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			n++
			if pixDiff(ia, ib, x, y) > 48*257 {
				bad++
			}
		}
	}
	return float64(bad) / float64(n)
}

func pixDiff(a, b image.Image, x, y int) uint32 {
	r1, g1, b1, a1 := a.At(x, y).RGBA()
	r2, g2, b2, a2 := b.At(x, y).RGBA()
	d := func(u, v uint32) uint32 {
		if u > v {
			return u - v
		}
		return v - u
	}
	return max(d(r1, r2), d(g1, g2), d(b1, b2), d(a1, a2))
}

// TestRenderAll: every chart of Names() in every format, in order, each as Render draws it at
// the default size; File writes itself (io.WriterTo) and names its file NAME.FORMAT.
func TestRenderAll(t *testing.T) {
	if testing.Short() {
		t.Skip("renders full-size charts")
	}
	res := analysistest.Saturating()
	files, err := RenderAll(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != len(Formats())*len(Names()) {
		t.Fatalf("rendered %d files, want %d", len(files), len(Formats())*len(Names()))
	}
	for i, name := range Names() {
		for j, format := range Formats() {
			f := files[len(Formats())*i+j]
			if f.Name != name || f.Format != format || f.FileName() != name+"."+format {
				t.Errorf("files[%d] = %s (%s, %s), want %s.%s", len(Formats())*i+j, f.FileName(), f.Name, f.Format, name, format)
			}
		}
	}
	dash := files[len(files)-1]
	c, err := Build("dashboard", res)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(c, DashboardWidth, DashboardHeight, "svg")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if n, err := dash.WriteTo(&buf); err != nil || n != int64(len(want)) || !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("dashboard.svg WriteTo: %d bytes, %v; want the %d bytes Render draws", n, err, len(want))
	}
	cfg, err := png.DecodeConfig(bytes.NewReader(files[len(files)-2].Data))
	if err != nil {
		t.Fatal(err)
	}
	// 14 × 9 in at gonum/plot's PNG default of 96 dpi.
	if cfg.Width != 1344 || cfg.Height != 864 {
		t.Errorf("dashboard.png is %d×%d px, want 1344×864", cfg.Width, cfg.Height)
	}
}

// TestRenderCompare: the two overlays of CompareNames() in every format, in order; a build
// error is the chart function's.
func TestRenderCompare(t *testing.T) {
	if testing.Short() {
		t.Skip("renders full-size charts")
	}
	runs := []*analysis.Result{analysistest.Saturating(), analysistest.TwentyLevels()}
	files, err := RenderCompare(runs, []string{"h100", "a100"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range files {
		got = append(got, f.FileName())
		if len(f.Data) == 0 {
			t.Errorf("%s is empty", f.FileName())
		}
	}
	if want := "compare_throughput.png compare_throughput.svg compare_latency.png compare_latency.svg"; strings.Join(got, " ") != want {
		t.Errorf("files %q, want %q", got, want)
	}
	checkSVG(t, files[3].Data)
	_, want := CompareThroughput(runs, []string{"h100"})
	if _, err := RenderCompare(runs, []string{"h100"}); err == nil || want == nil || err.Error() != want.Error() {
		t.Errorf("labels mismatch: error %v, want CompareThroughput's %v", err, want)
	}
}

func TestPow2Ticks(t *testing.T) {
	labels := func(lo, hi float64) []string {
		var out []string
		for _, tk := range (pow2Ticks{}).Ticks(lo, hi) {
			if tk.Label != "" {
				out = append(out, tk.Label)
			}
		}
		return out
	}
	if got := strings.Join(labels(1/1.3, 128*1.3), ","); got != "1,2,4,8,16,32,64,128" {
		t.Errorf("ticks 1…128 = %s", got)
	}
	// 13 powers of two: every other one labelled.
	if got := strings.Join(labels(1/1.3, 4096*1.3), ","); got != "1,4,16,64,256,1024,4096" {
		t.Errorf("ticks 1…4096 = %s", got)
	}
	if got := labels(3.1, 3.9); len(got) == 0 {
		t.Error("no tick between 3.1 and 3.9: want the log-ticks fallback")
	}
}

func TestNiceTicks(t *testing.T) {
	for _, tc := range []struct {
		lo, hi float64
		want   string
	}{
		{0, 2900, "0,500,1000,1500,2000,2500"},
		{0, 0.07, "0.00,0.01,0.02,0.03,0.04,0.05,0.06,0.07"},
		{0, 61, "0,10,20,30,40,50,60"},
	} {
		var got []string
		for _, tk := range (niceTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if g := strings.Join(got, ","); g != tc.want {
			t.Errorf("ticks [%g, %g] = %s, want %s", tc.lo, tc.hi, g, tc.want)
		}
	}
}

// TestUSLCurvePeak checks the sampled USL curve peaks at N* = √((1−σ)/κ) (DESIGN §4):
// σ = 0.045, κ = 0.0004 → N* = √(0.955/0.0004) = 48.9.
func TestUSLCurvePeak(t *testing.T) {
	p := analysistest.Saturating().Throughput.USL
	c := sampleCurve(p.At, 1, 1024)
	best := c[0]
	for _, pt := range c {
		if pt.Y > best.Y {
			best = pt
		}
	}
	want := math.Sqrt(0.955 / 0.0004)
	// 120 samples over 10 octaves: adjacent samples are 2^(10/120) = 6% apart.
	if math.Abs(best.X/want-1) > 0.06 {
		t.Errorf("curve peaks at N = %.1f, want %.1f ± 6%%", best.X, want)
	}
}

func TestCompare(t *testing.T) {
	a, b := analysistest.Saturating(), analysistest.TwentyLevels()
	for _, f := range []func([]*analysisResult, []string) (Chart, error){compareThroughput, compareLatency} {
		c, err := f([]*analysisResult{a, b}, []string{"h100", "a100"})
		if err != nil {
			t.Fatal(err)
		}
		svg, err := Render(c, testW, testH, "svg")
		if err != nil {
			t.Fatal(err)
		}
		checkSVG(t, svg)
		for _, w := range []string{"h100", "a100"} {
			if !bytes.Contains(svg, []byte(w)) {
				t.Errorf("compare chart lacks the label %q", w)
			}
		}
	}
	if _, err := CompareThroughput([]*analysisResult{a}, nil); err == nil {
		t.Error("mismatched labels: want an error")
	}
	if _, err := CompareLatency(nil, nil); err == nil {
		t.Error("no runs: want an error")
	}
}

type analysisResult = analysis.Result

func compareThroughput(r []*analysis.Result, l []string) (Chart, error) {
	return CompareThroughput(r, l)
}
func compareLatency(r []*analysis.Result, l []string) (Chart, error) { return CompareLatency(r, l) }

// checkGolden compares a rendered chart with its golden file (-update rewrites it): SVG byte
// for byte, PNG allowing ≤ 0.5% of pixels to differ by more than 48/255 (anti-aliasing).
func checkGolden(t *testing.T, path string, got []byte, format string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./plots -update)", err)
	}
	if format == "svg" {
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file", path)
		}
		return
	}
	if frac := pngDiff(t, got, want); frac > 0.005 {
		t.Errorf("%s: %.2f%% of pixels differ by more than 48/255, want ≤ 0.5%%", path, 100*frac)
	}
}

// throughputSVG renders res's throughput chart as SVG text.
func throughputSVG(t *testing.T, res *analysis.Result) string {
	t.Helper()
	p, err := Throughput(res)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Render(p, testW, testH, "svg")
	if err != nil {
		t.Fatal(err)
	}
	return string(svg)
}
