package plots

import (
	"bytes"
	"image/png"
	"reflect"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// TestParetoFrontier: the frontier is the non-dominated set of the valid points, by per-user
// speed ascending; a dominated, an invalid and a tied-but-worse point are left out.
func TestParetoFrontier(t *testing.T) {
	pts := []ParetoPoint{
		{Concurrency: 1, PerUser: 100, PerGPU: 100, Valid: true},
		{Concurrency: 2, PerUser: 90, PerGPU: 180, Valid: true},
		{Concurrency: 4, PerUser: 80, PerGPU: 170, Valid: true}, // dominated by 2
		{Concurrency: 8, PerUser: 60, PerGPU: 400, Valid: true},
		{Concurrency: 16, PerUser: 30, PerGPU: 500, Valid: false}, // invalid: not on it
		{Concurrency: 32, PerUser: 60, PerGPU: 390, Valid: true},  // same x as 8, lower y
		{Concurrency: 64, PerUser: 20, PerGPU: 450, Valid: true},
	}
	var got []int
	for _, p := range paretoFrontier(pts) {
		got = append(got, p.Concurrency)
	}
	if want := []int{64, 8, 2, 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("frontier = %v, want %v", got, want)
	}
	if f := paretoFrontier(nil); len(f) != 0 {
		t.Errorf("frontier of nothing = %v", f)
	}
}

// TestParetoPoints: x = 1000 ÷ TPOT p50 (ms), y = TPS ÷ GPUs per replica (0 counts as 1).
func TestParetoPoints(t *testing.T) {
	r := analysistest.Saturating()
	l := sortedLevels(r)[0]
	for _, g := range []int{0, 1, 4} {
		p := paretoPoints(r, g)[0]
		wantY := float64(l.OutputTPS) / float64(max(g, 1))
		if p.Concurrency != l.Concurrency || p.PerUser != 1000/float64(l.TPOT.P50) || p.PerGPU != wantY {
			t.Errorf("gpus %d: point %+v, want x %g y %g", g, p, 1000/float64(l.TPOT.P50), wantY)
		}
	}
}

// TestParetoRenders: three scenarios render as PNG (at PNGDPI: 2 × 672 × 480 px), SVG and narrow
// SVG (keyed by SVGs for report.html, without ids), their "N=c" labels placed apart, clear of
// the markers, inside the data area.
func TestParetoRenders(t *testing.T) {
	runs := []*analysis.Result{analysistest.Saturating(), slower(analysistest.Saturating(), 0.5, 2), analysistest.TwentyLevels()}
	labels := []string{"512-128", "2048-256", "128-1024"}
	f, err := pareto(runs, labels, 1)
	if err != nil {
		t.Fatal(err)
	}
	checkLabels(t, "pareto", f, Width, Height)
	files, err := RenderPareto(runs, labels, 1)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 3 || files[0].FileName() != "pareto.png" || files[1].FileName() != "pareto.svg" || !files[2].Narrow ||
		files[2].FileName() != "pareto.narrow.svg" {
		t.Fatalf("files = %v", files)
	}
	checkViewBox(t, files[2])
	svgs := SVGs(files, "~n")
	if len(svgs) != 2 || !bytes.Equal(svgs[ParetoName], files[1].Data) || !bytes.Equal(svgs[ParetoName+"~n"], files[2].Data) {
		t.Errorf("SVGs keys %d renderings, want the SVG by its name and the narrow one by its name + the suffix", len(svgs))
	}
	// report.html inlines a chart twice: an id (a clip path's, a gradient's) would be
	// duplicated, its references resolved to the copy the page hides.
	for _, f := range files[1:] {
		if bytes.Contains(f.Data, []byte(" id=")) {
			t.Errorf("the SVG (narrow %v) has an id, which both inlined copies would carry", f.Narrow)
		}
	}
	if !bytes.HasPrefix(files[0].Data, []byte("\x89PNG")) || !bytes.Contains(files[1].Data, []byte("<svg")) {
		t.Error("not a PNG and an SVG")
	}
	if w, h := pngSize(t, files[0].Data); w != 1344 || h != 960 {
		t.Errorf("PNG %d × %d px, want 1344 × 960", w, h)
	}
	for _, s := range []string{"512-128 frontier", "2048-256 knee", "output tokens/s per user"} {
		if !bytes.Contains(files[1].Data, []byte(s)) {
			t.Errorf("SVG lacks %q", s)
		}
	}
	if _, err := pareto([]*analysis.Result{analysistest.NoData()}, []string{"x"}, 1); err != nil {
		t.Errorf("no data: %v", err)
	}
	if _, err := pareto(runs, labels[:2], 1); err == nil {
		t.Error("Pareto took 2 labels for 3 scenarios")
	}
}

// pngSize returns a PNG's width and height in pixels.
func pngSize(t *testing.T, b []byte) (w, h int) {
	t.Helper()
	cfg, err := png.DecodeConfig(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Width, cfg.Height
}

// TestParetoKnee: the knee's marker sits at its TPS ÷ GPUs (not an interpolation of the
// levels' TPS) and the per-user speed interpolated in log2 concurrency between the valid
// levels around it; a knee outside the valid levels is not drawn, the legend says so.
func TestParetoKnee(t *testing.T) {
	pts := []ParetoPoint{
		{Concurrency: 2, PerUser: 100, PerGPU: 50, Valid: true},
		{Concurrency: 8, PerUser: 40, PerGPU: 80, Valid: true},
		{Concurrency: 16, PerUser: 20, PerGPU: 81, Valid: false},
	}
	b := newBuilder("t", "x", "y")
	// c = 4 is halfway between 2 and 8 in log2: x = 70.
	s, err := b.paretoKnee("a", runColor(0), &analysis.Knee{Concurrency: 4, TPS: 150}, pts, 2)
	if err != nil || s == nil {
		t.Fatalf("knee at 4: %v, %v", s, err)
	}
	if got := s.XYs[0]; got.X != 70 || got.Y != 75 {
		t.Errorf("knee at (%g, %g), want (70, 75 = 150 TPS ÷ 2 GPUs)", got.X, got.Y)
	}
	s, err = b.paretoKnee("b", runColor(1), &analysis.Knee{Concurrency: 12, TPS: 160}, pts, 1)
	if err != nil || s != nil {
		t.Errorf("knee at 12 (beyond the valid levels): %v, %v; want not drawn", s, err)
	}
	if n := b.entries[len(b.entries)-1].name; n != "b knee N≈12.0: outside the valid levels (not drawn)" {
		t.Errorf("legend %q", n)
	}
}
