package plots

import (
	"math"
	"regexp"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
)

// TestSVGFontFallback: every SVG text names Liberation Sans, then generic fallbacks ending in
// sans-serif, so a browser without the font still draws sans-serif text.
func TestSVGFontFallback(t *testing.T) {
	for _, name := range names() {
		svg, err := Render(mustBuild(t, name), Width, Height, "svg")
		if err != nil {
			t.Fatal(err)
		}
		fams := regexp.MustCompile(`font-family:[^;"]*;`).FindAllString(string(svg), -1)
		if len(fams) == 0 {
			t.Fatalf("%s: no text", name)
		}
		for _, f := range fams {
			if f != svgFontFamily || !strings.HasSuffix(f, ",sans-serif;") {
				t.Fatalf("%s: %q, want %q", name, f, svgFontFamily)
			}
		}
	}
}

// TestDashboardOneSubtitle: the dashboard names the run once, above the grid; its charts
// carry their kind alone.
func TestDashboardOneSubtitle(t *testing.T) {
	for _, res := range []*analysis.Result{analysistest.Saturating(), analysistest.Rate()} {
		g, err := Build("dashboard", res)
		if err != nil {
			t.Fatal(err)
		}
		svg, err := Render(g, dashboardWidth, dashboardHeight, "svg")
		if err != nil {
			t.Fatal(err)
		}
		sub := xmlEscape(subtitle(res.Meta))
		if n := strings.Count(string(svg), sub); n != 1 {
			t.Errorf("%s: subtitle %q %d times, want once", res.Mode, sub, n)
		}
	}
}

// TestSimulatorTitle: the in-process simulator's ephemeral loopback port is no part of a
// title; it is named "built-in simulator". Any other endpoint is kept.
func TestSimulatorTitle(t *testing.T) {
	sim := &record.ServerInfo{Engine: server.SimEngine, From: "GET /version"}
	for _, tc := range []struct {
		endpoint string
		server   *record.ServerInfo
		want     string
	}{
		{"http://127.0.0.1:35537/v1", sim, "kneecap-sim · built-in simulator"},
		{"http://localhost:41011/v1", sim, "kneecap-sim · built-in simulator"},
		{"http://[::1]:41011/v1", sim, "kneecap-sim · built-in simulator"},
		{"http://10.0.0.7:8000/v1", sim, "kneecap-sim · http://10.0.0.7:8000/v1"},   // a simulator elsewhere
		{"http://127.0.0.1:8000/v1", nil, "kneecap-sim · http://127.0.0.1:8000/v1"}, // a local server
		{"http://127.0.0.1:8000/v1", &record.ServerInfo{Engine: "vLLM"}, "kneecap-sim · http://127.0.0.1:8000/v1"},
	} {
		m := analysis.Meta{Model: "kneecap-sim", Endpoint: tc.endpoint, Server: tc.server}
		if got := subtitle(m); got != tc.want {
			t.Errorf("%s (%v): subtitle %q, want %q", tc.endpoint, tc.server, got, tc.want)
		}
	}
}

// TestRangesEndOnTicks: every axis of every chart of every fixture (and the sample run) starts
// and ends on a tick of its marker.
func TestRangesEndOnTicks(t *testing.T) {
	runs := map[string]*analysis.Result{"sample-run": sampleRun(t), "rate": analysistest.Rate()}
	for _, f := range analysistest.Fixtures() {
		runs[f.Name] = f.Result()
	}
	for name, r := range runs {
		mode := record.ModeConcurrency
		if r != nil {
			mode = r.Mode
		}
		for _, chart := range NamesFor(mode) {
			if chart == "dashboard" {
				continue
			}
			c, err := Build(chart, r)
			if err != nil {
				t.Fatal(err)
			}
			p := c.(*Figure).Plot()
			for axis, a := range map[string]*plot.Axis{"x": &p.X, "y": &p.Y} {
				if a.Tick.Marker == nil || a.Min == 0 && a.Max == 1 {
					continue // a no-data note
				}
				ts := a.Tick.Marker.Ticks(a.Min, a.Max)
				if len(ts) == 0 || !near(ts[0].Value, a.Min) || !near(ts[len(ts)-1].Value, a.Max) {
					t.Errorf("%s/%s: %s axis [%g, %g] does not end on ticks %v", name, chart, axis, a.Min, a.Max, ts)
				}
			}
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// TestMaxBeside: the maximum-TPS triangle stands right of its point, clear of the point's
// glyph (3 pt) and its error bar cap (5 pt wide), instead of over them.
func TestMaxBeside(t *testing.T) {
	b, err := throughputChart(analysistest.Saturating())
	if err != nil {
		t.Fatal(err)
	}
	m := b.maxMark
	if m == nil {
		t.Fatal("no max marker")
	}
	if gap := m.dx - m.style.Radius; gap < vg.Points(3) {
		t.Errorf("max marker %.1f pt right of its point with radius %.1f: it covers the point", m.dx, m.style.Radius)
	}
	if m.x != 32 || math.Abs(m.y-tps32) > 1e-9 {
		t.Errorf("max marker at (%g, %g), want (32, %g)", m.x, m.y, tps32)
	}
}
