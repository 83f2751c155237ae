package plots

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
)

// sampleRun is the analysis of the sample run shipped in examples/sample-run (10 levels, 1 …
// 128 with 25 and 102 added: labels N=32, 64, 102 and 128 crowd at the plateau).
func sampleRun(t *testing.T) *analysis.Result {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "examples", "sample-run", "analysis.json"))
	if err != nil {
		t.Fatal(err)
	}
	var r analysis.Result
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// checkLabels draws f at w × h and fails when two placed labels' boxes intersect, a box
// covers a marker (its glyph's square), or a box leaves the data area.
func checkLabels(t *testing.T, name string, f *Figure, w, h vg.Length) {
	t.Helper()
	c := draw.New(vgsvg.New(w, h))
	f.Draw(c)
	checkPlaced(t, name, f, f.dataCanvas(c))
}

// checkPlaced checks the labels f placed when it was last drawn with data area dc.
func checkPlaced(t *testing.T, name string, f *Figure, dc draw.Canvas) {
	t.Helper()
	lp := f.labels
	if lp == nil {
		t.Fatalf("%s: no labels", name)
	}
	tx, ty := f.p.Transforms(&dc)
	for i, a := range lp.placed {
		if !within(dc.Rectangle, a.box) {
			t.Errorf("%s: %s box %v leaves the data area %v", name, a.text, a.box, dc.Rectangle)
		}
		for _, b := range lp.placed[i+1:] {
			if overlaps(a.box, b.box) {
				t.Errorf("%s: labels %s %v and %s %v overlap", name, a.text, a.box, b.text, b.box)
			}
		}
		for _, m := range lp.marks {
			pt := vg.Point{X: tx(m.x), Y: ty(m.y)}
			if dc.Contains(pt) && overlaps(a.box, around(pt, m.r)) {
				t.Errorf("%s: label %s %v covers the marker at (%g, %g)", name, a.text, a.box, m.x, m.y)
			}
		}
	}
}

// TestLabelsApart: on the sample run, the saturating fixture and every other fixture, the
// latency-vs-throughput labels and the comparison's are placed without overlap, clear of
// the markers, at the file size and in the dashboard; on the sample run none is dropped.
func TestLabelsApart(t *testing.T) {
	runs := map[string]*analysis.Result{"sample-run": sampleRun(t)}
	for _, f := range analysistest.Fixtures() {
		runs[f.Name] = f.Result()
	}
	for name, r := range runs {
		f, err := latencyVsThroughput(r)
		if err != nil {
			t.Fatal(err)
		}
		if f.labels == nil {
			continue // no data
		}
		checkLabels(t, name, f, Width, Height)
		if name == "sample-run" && (len(f.labels.dropped) > 0 || len(f.labels.placed) != 10) {
			t.Errorf("sample run: %d labels placed, %q dropped; want all 10 placed", len(f.labels.placed), f.labels.dropped)
		}
		g, err := Dashboard(r)
		if err != nil {
			t.Fatal(err)
		}
		c := draw.New(vgsvg.New(dashboardWidth, dashboardHeight))
		g.Draw(c)
		lat := g.Figures[1][1]
		checkPlaced(t, name+"/dashboard", lat, lat.dataCanvas(tile(g, c, 1, 1)))
	}
	sample, sat := sampleRun(t), analysistest.Saturating()
	f, err := CompareLatency([]*analysis.Result{sample, sat, slower(analysistest.TwentyLevels(), 0.6, 1.5)}, []string{"sample", "h100", "a100"})
	if err != nil {
		t.Fatal(err)
	}
	checkLabels(t, "compare", f, Width, Height)
}

// tile returns the canvas Grid.Draw gives the figure at row i, column j of g drawn in c.
func tile(g *Grid, c draw.Canvas, i, j int) draw.Canvas {
	_, _, cells := g.layout(c)
	return cells[i][j]
}

// TestPlaceCrowd: ten labels on one point take the free places around it, then farther
// out with leader lines, and the rest are dropped; none overlaps another or the marker.
func TestPlaceCrowd(t *testing.T) {
	r := analysistest.Base([]int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512})
	for i := range r.Levels {
		l := &r.Levels[i]
		l.OutputTPS, l.E2E.P95, l.E2E.P50, l.TTFT.P95 = 1000, 100, 100, 100
	}
	r.Levels[0].OutputTPS = 10 // a second point, so the axes have a range
	f, err := latencyVsThroughput(r)
	if err != nil {
		t.Fatal(err)
	}
	checkLabels(t, "crowd", f, Width, Height)
	lp := f.labels
	led := 0
	for _, p := range lp.placed {
		if p.leader {
			led++
		}
	}
	if len(lp.placed)+len(lp.dropped) != 10 || led == 0 || len(lp.placed) < 8 {
		t.Errorf("%d placed (%d led out), %d dropped: want at least 8 of 10 placed, some led out", len(lp.placed), led, len(lp.dropped))
	}
}

// TestSegmentHits checks the clipping test against boxes a segment crosses, touches, misses
// and lies inside.
func TestSegmentHits(t *testing.T) {
	box := vg.Rectangle{Min: vg.Point{X: 10, Y: 10}, Max: vg.Point{X: 20, Y: 20}}
	for _, tc := range []struct {
		a, b vg.Point
		want bool
	}{
		{vg.Point{X: 0, Y: 15}, vg.Point{X: 30, Y: 15}, true},  // straight through
		{vg.Point{X: 12, Y: 12}, vg.Point{X: 18, Y: 18}, true}, // inside
		{vg.Point{X: 0, Y: 0}, vg.Point{X: 30, Y: 5}, false},   // below
		{vg.Point{X: 0, Y: 30}, vg.Point{X: 30, Y: 0}, true},   // diagonal through the middle
		{vg.Point{X: 0, Y: 12}, vg.Point{X: 8, Y: 30}, false},  // passes the corner outside
	} {
		if got := segmentHits(tc.a, tc.b, box); got != tc.want {
			t.Errorf("%v–%v: hits %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}
