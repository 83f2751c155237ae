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
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// The tests render at the file size: the legend and the labels are laid out for it.
const (
	testW = Width
	testH = Height
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
		for _, name := range names() {
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
				// PNG for two awkward fixtures (the saturating one is TestGolden's).
				if f.Name == "huge_range" && name == "throughput" || f.Name == "no_data" && name == "dashboard" {
					b, err := Render(c, w, h, "png")
					if err != nil {
						t.Fatalf("png: %v", err)
					}
					img, err := png.Decode(bytes.NewReader(b))
					if err != nil {
						t.Fatalf("png decode: %v", err)
					}
					// Twice 96 dpi: the layout of w at 96 dpi, twice the pixels.
					if got, want := img.Bounds().Dx(), int(math.Round(w.Dots(192))); got != want {
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

// TestLegendClearOfData lays each chart out at its file size and checks that the legend is
// a strip below the data area (so nothing drawn in the data area crosses it) that leaves the
// data area most of the height, and that every tracked point lies within the axis ranges.
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
	p, err := throughput(analysistest.Saturating())
	if err != nil {
		t.Fatal(err)
	}
	if p.Plot().Y.Min != 0 {
		t.Errorf("throughput y axis starts at %g, want 0", p.Plot().Y.Min)
	}
}

// checkLegendClear fails when b's legend, laid out at Width × Height, reaches into the data
// area or takes more than 40% of the height, or a tracked point lies outside the axes.
func checkLegendClear(t *testing.T, name string, b *builder) {
	t.Helper()
	if b.empty || len(b.entries) == 0 {
		return
	}
	f := b.figure()
	c := draw.New(vgsvg.New(Width, Height))
	leg, data := f.legendRect(c), f.dataCanvas(c)
	if leg.Max.Y > data.Min.Y {
		t.Errorf("%s: legend strip up to y = %.0f pt reaches into the data area from %.0f pt", name, leg.Max.Y, data.Min.Y)
	}
	if h := leg.Size().Y; h > 0.4*Height {
		t.Errorf("%s: legend strip %.0f pt high, more than 40%% of %.0f pt", name, h, Height)
	}
	p := f.Plot()
	for i := range b.xs {
		x, y := b.xs[i], b.ys[i]
		if !finite(x) || !finite(y) || b.logY && y <= 0 || b.logX && x <= 0 {
			continue
		}
		if x < p.X.Min || x > p.X.Max || y < p.Y.Min || y > p.Y.Max {
			t.Errorf("%s: point (%g, %g) outside the axes [%g, %g] × [%g, %g]", name, x, y, p.X.Min, p.X.Max, p.Y.Min, p.Y.Max)
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
	for _, name := range names() {
		t.Run(name, func(t *testing.T) {
			c := mustBuild(t, name)
			w, h := testW, testH
			if name == "dashboard" {
				w, h = 2*testW, 2*testH
			}
			for _, format := range goldenFormats(name) {
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
	// Decoded PNGs of the same encoder are the same image type: compare their bytes directly
	// (image.At per pixel is slow under -race at 2× density).
	if pa, pb := pixOf(ia), pixOf(ib); pa != nil && len(pa) == len(pb) {
		bad := 0
		for i := 0; i+3 < len(pa); i += 4 {
			for k := range 4 {
				if d := int(pa[i+k]) - int(pb[i+k]); d > 48 || d < -48 {
					bad++
					break
				}
			}
		}
		return float64(bad) / float64(len(pa)/4)
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

// pixOf returns the 8-bit RGBA (or NRGBA) pixels of img, nil for another image type.
func pixOf(img image.Image) []uint8 {
	switch m := img.(type) {
	case *image.RGBA:
		return m.Pix
	case *image.NRGBA:
		return m.Pix
	}
	return nil
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
// the default size (its narrow rendering after it, TestRenderFormats); File writes itself
// (io.WriterTo) and names its file NAME.FORMAT.
func TestRenderAll(t *testing.T) {
	if testing.Short() {
		t.Skip("renders full-size charts")
	}
	res := analysistest.Saturating()
	files, err := RenderAll(res)
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f File) bool { return f.Narrow })
	if len(files) != len(formats())*len(names()) {
		t.Fatalf("rendered %d files, want %d", len(files), len(formats())*len(names()))
	}
	for i, name := range names() {
		for j, format := range formats() {
			f := files[len(formats())*i+j]
			if f.Name != name || f.Format != format || f.FileName() != name+"."+format {
				t.Errorf("files[%d] = %s (%s, %s), want %s.%s", len(formats())*i+j, f.FileName(), f.Name, f.Format, name, format)
			}
		}
	}
	dash := files[len(files)-1]
	c, err := Build("dashboard", res)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Render(c, dashboardWidth, dashboardHeight, "svg")
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
	// 14 × 10 in at twice gonum/plot's PNG default of 96 dpi.
	if cfg.Width != 2688 || cfg.Height != 1920 {
		t.Errorf("dashboard.png is %d×%d px, want 2688×1920", cfg.Width, cfg.Height)
	}
}

// TestRenderCompare: the two overlays of compareNames() in every format, in order; a build
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
		if len(f.Data) == 0 {
			t.Errorf("%s is empty", f.FileName())
		}
		if !f.Narrow {
			got = append(got, f.FileName())
		}
		if f.Format == "svg" {
			checkSVG(t, f.Data)
		}
	}
	if want := "compare_throughput.png compare_throughput.svg compare_latency.png compare_latency.svg"; strings.Join(got, " ") != want {
		t.Errorf("files %q, want %q", got, want)
	}
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

// goldenFormats are the formats the golden tests compare chart name in: SVG always; PNG (slow
// to rasterize at 2× under -race) for the dashboards, which draw every single chart but QPS,
// and for compare_latency's labels, or every chart with -update so that the PNG files stay
// current for review.
func goldenFormats(name string) []string {
	if *update || name == "dashboard" || name == "compare_latency" {
		return []string{"svg", "png"}
	}
	return []string{"svg"}
}

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
	p, err := throughput(res)
	if err != nil {
		t.Fatal(err)
	}
	svg, err := Render(p, testW, testH, "svg")
	if err != nil {
		t.Fatal(err)
	}
	return string(svg)
}
