package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"image/png"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/plots"
	"github.com/kneecap/kneecap/report"
)

// browserWidths are the viewport widths, in CSS px, report.html is checked and screenshot at: a
// laptop and a phone. It is also checked, not screenshot, at the narrowest width that shows
// the default charts (breakpointPx + 1), where they are drawn smallest.
var browserWidths = []int{1400, 390}

// breakpointPx returns the width, in CSS px (16 a rem), up to which page shows the narrow
// renderings: the max-width of its media query.
func breakpointPx(t *testing.T, page []byte) int {
	t.Helper()
	m := regexp.MustCompile(`@media \(max-width:([0-9.]+)rem\)\{figure \.wide\{display:none\}`).FindSubmatch(page)
	if m == nil {
		t.Fatal("the page has no media query that shows the narrow renderings")
	}
	rem, err := strconv.ParseFloat(string(m[1]), 64)
	if err != nil {
		t.Fatal(err)
	}
	return int(rem * 16)
}

// chromium finds a headless Chromium: $KNEECAP_CHROMIUM, else the usual names on PATH; ""
// when there is none.
func chromium() string {
	if p := os.Getenv("KNEECAP_CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless_shell"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// layout is what the harness measures of one page in an iframe of one width. Charts are the
// SVG charts drawn (a rendering hidden by the page's media query is not); ChartsOutside those
// whose box reaches past the viewport, FiguresCropped the figures whose content is wider than
// they are, TextsOutside the chart texts reaching past their chart's box by more than a
// quarter of their size (a text's box holds the font's ascent and descent, beyond its ink;
// TextOutside the first of them), MinChartTextPx the smallest chart text drawn, in CSS px;
// DuplicateIDs the elements whose id an earlier one has (a chart is inlined twice).
type layout struct {
	Width, ScrollWidth, ClientWidth   int
	Cards, CardsOutside, FirstCardTop int
	Tables, TablesUnwrapped, Charts   int
	ChartsOutside, FiguresCropped     int
	TextsOutside, DuplicateIDs        int
	TextOutside                       string
	MinChartTextPx                    float64
}

// harness loads page in an iframe of each of widths and writes the layouts as "RESULT [json]" into
// its own DOM, for chromium --dump-dom. The iframes are same-origin (one loopback server), so
// the script can read their documents; report.html itself has no script.
func harness(page string, widths []int) string {
	var frames, ids []string
	for _, w := range widths {
		id := "f" + strconv.Itoa(w)
		frames = append(frames, `<iframe id="`+id+`" width="`+strconv.Itoa(w)+`" height="900"></iframe>`)
		ids = append(ids, `'`+id+`'`)
	}
	return `<!DOCTYPE html><html><body><pre id="out"></pre>` + strings.Join(frames, "") + `<script>
function outside(b,o,tol){return b.left<o.left-tol||b.right>o.right+tol||b.top<o.top-tol||b.bottom>o.bottom+tol;}
function measure(f){var d=f.contentDocument,de=d.documentElement,w=f.contentWindow,cw=de.clientWidth;
var r={Width:+f.width,ScrollWidth:de.scrollWidth,ClientWidth:cw,Cards:0,CardsOutside:0,FirstCardTop:-1,Tables:0,TablesUnwrapped:0,Charts:0,ChartsOutside:0,FiguresCropped:0,TextsOutside:0,TextOutside:'',MinChartTextPx:0,DuplicateIDs:0};
var ids={};d.querySelectorAll('[id]').forEach(function(e){if(ids[e.id])r.DuplicateIDs++;ids[e.id]=true;});
d.querySelectorAll('.card').forEach(function(c){var b=c.getBoundingClientRect();if(r.Cards++===0)r.FirstCardTop=Math.round(b.top);if(b.left<0||b.right>cw+0.5)r.CardsOutside++;});
d.querySelectorAll('table').forEach(function(t){r.Tables++;var p=t.parentElement;if(!p.classList.contains('scroll'))r.TablesUnwrapped++;});
d.querySelectorAll('figure').forEach(function(g){if(g.scrollWidth>g.clientWidth)r.FiguresCropped++;});
var min=Infinity,page={left:0,right:cw,top:-1e9,bottom:1e9};d.querySelectorAll('figure svg').forEach(function(s){var b=s.getBoundingClientRect();if(b.width===0)return;
r.Charts++;if(outside(b,page,0.5))r.ChartsOutside++;var k=b.width/s.viewBox.baseVal.width;
s.querySelectorAll('text').forEach(function(t){var px=parseFloat(w.getComputedStyle(t).fontSize)*k;min=Math.min(min,px);
if(outside(t.getBoundingClientRect(),b,px/4)&&r.TextsOutside++===0)r.TextOutside=t.textContent;});});
r.MinChartTextPx=min===Infinity?0:min;return r;}
var done=[],ids=[` + strings.Join(ids, ",") + `];
ids.forEach(function(id){var f=document.getElementById(id);f.addEventListener('load',function(){done.push(measure(f));
if(done.length===ids.length)document.getElementById('out').textContent='RESULT '+JSON.stringify(done);});f.src='` + page + `';});
</script></body></html>`
}

// svgCharts renders res's charts as kneecap inlines them in report.html: the SVGs of
// RenderAll, each chart's default and narrow rendering.
func svgCharts(t *testing.T, res *analysis.Result) map[string][]byte {
	t.Helper()
	files, err := plots.RenderAll(res)
	if err != nil {
		t.Fatal(err)
	}
	return plots.SVGs(files, report.NarrowSuffix)
}

// compareCharts renders the two overlay charts of runs as compare.html inlines them.
func compareCharts(t *testing.T, runs []*analysis.Result, labels []string) map[string][]byte {
	t.Helper()
	files, err := plots.RenderCompare(runs, labels)
	if err != nil {
		t.Fatal(err)
	}
	return plots.SVGs(files, report.NarrowSuffix)
}

// browserPage is one page checked in Chromium, with how many cards and charts it shows and
// the widths it is checked at (browserWidths and breakpointPx + 1).
type browserPage struct {
	name          string
	html          []byte
	cards, charts int
	widths        []int
}

func browserPages(t *testing.T) []browserPage {
	var closed, energy, rate, cmp bytes.Buffer
	sat := analysistest.Saturating()
	if err := report.HTML(&closed, sat, svgCharts(t, sat)); err != nil {
		t.Fatal(err)
	}
	en := analysistest.WithEnergy() // the efficiency chart, two panels under one subtitle
	if err := report.HTML(&energy, en, svgCharts(t, en)); err != nil {
		t.Fatal(err)
	}
	rr := analysistest.Rate()
	rr.Meta.Model = "neuralmagic/Meta-Llama-3.1-70B-Instruct-FP8-dynamic" // no space; breaks at "/", "-"
	if err := report.HTML(&rate, rr, svgCharts(t, rr)); err != nil {
		t.Fatal(err)
	}
	runs, labels := []*analysis.Result{sat, analysistest.TwentyLevels()}, []string{"h100", "a100"}
	if err := report.CompareHTML(&cmp, runs, labels, compareCharts(t, runs, labels), nil); err != nil {
		t.Fatal(err)
	}
	pages := []browserPage{{"report", closed.Bytes(), 6, 5, nil}, {"energy", energy.Bytes(), 8, 6, nil},
		{"rate", rate.Bytes(), 5, 4, nil}, {"compare", cmp.Bytes(), 12, 2, nil}}
	for i := range pages {
		pages[i].widths = append(slices.Clone(browserWidths), breakpointPx(t, pages[i].html)+1)
	}
	return pages
}

// minChartTextPx is the smallest chart text, in CSS px, accepted as readable: the 8 pt point
// labels of a chart drawn at 1.06 px a point (the default 504 pt rendering in a 535 px column).
const minChartTextPx = 8.5

// TestBrowserLayout loads report.html (closed loop, closed loop with energy, arrival rate of a
// long model name, with their charts and narrow renderings) and compare.html in headless
// Chromium at 1,400 and 390 px and one px above the page's breakpoint, and checks what a reader
// would see: no horizontal page scroll, the figure cards on the first screen and
// inside the page, every table in its own scroll container, every chart whole — its box inside
// the viewport, its figure not cropping it, every text of it (title, axes, legend, knee
// label) inside its box — and its smallest text at least minChartTextPx. It screenshots each
// page at browserWidths into $KNEECAP_SCREENSHOTS (`make screenshots`), else a temporary
// directory. Skipped when no Chromium is installed.
func TestBrowserLayout(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("no headless Chromium (apt-get install chromium, or set KNEECAP_CHROMIUM)")
	}
	dir := t.TempDir()
	shots := os.Getenv("KNEECAP_SCREENSHOTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	pages := browserPages(t)
	for _, p := range pages {
		write(t, filepath.Join(dir, p.name+".html"), p.html)
		write(t, filepath.Join(dir, "harness-"+p.name+".html"), []byte(harness(p.name+".html", p.widths)))
	}
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	for _, p := range pages {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			out := runChromium(t, bin, "--dump-dom", srv.URL+"/harness-"+p.name+".html")
			_, js, ok := strings.Cut(string(out), "RESULT ")
			if !ok {
				t.Fatalf("the harness wrote no result:\n%.2000s", out)
			}
			js, _, _ = strings.Cut(js, "</pre>")
			var ls []layout
			if err := json.Unmarshal([]byte(js), &ls); err != nil {
				t.Fatalf("harness result %q: %v", js, err)
			}
			if len(ls) != len(p.widths) {
				t.Fatalf("%d layouts, want %d", len(ls), len(p.widths))
			}
			for _, l := range ls {
				checkLayout(t, p, l)
			}
			for _, w := range browserWidths {
				shot := filepath.Join(shots, p.name+"-"+strconv.Itoa(w)+".png")
				runChromium(t, bin, "--screenshot="+shot, "--window-size="+strconv.Itoa(w)+",2400", srv.URL+"/"+p.name+".html")
				checkScreenshot(t, shot, w)
			}
		})
	}
}

func checkLayout(t *testing.T, p browserPage, l layout) {
	t.Helper()
	if l.ScrollWidth > l.ClientWidth {
		t.Errorf("%s at %d px: the page scrolls sideways (scroll width %d px > %d px)", p.name, l.Width, l.ScrollWidth, l.ClientWidth)
	}
	if l.Cards != p.cards || l.CardsOutside > 0 {
		t.Errorf("%s at %d px: %d cards (want %d), %d outside the page", p.name, l.Width, l.Cards, p.cards, l.CardsOutside)
	}
	if p.name != "compare" && (l.FirstCardTop < 0 || l.FirstCardTop > 900) {
		t.Errorf("%s at %d px: the first card is at %d px, not on the first screen (900 px)", p.name, l.Width, l.FirstCardTop)
	}
	if l.Tables == 0 || l.TablesUnwrapped > 0 {
		t.Errorf("%s at %d px: %d tables, %d not in a scroll container", p.name, l.Width, l.Tables, l.TablesUnwrapped)
	}
	t.Logf("%s at %d px: smallest chart text %.2f px", p.name, l.Width, l.MinChartTextPx)
	if l.Charts != p.charts || l.MinChartTextPx < minChartTextPx {
		t.Errorf("%s at %d px: %d charts (want %d), smallest chart text %.2f px (want ≥ %.1f)", p.name, l.Width, l.Charts, p.charts, l.MinChartTextPx, minChartTextPx)
	}
	if l.ChartsOutside > 0 || l.FiguresCropped > 0 {
		t.Errorf("%s at %d px: %d charts reach past the %d px viewport, %d figures crop theirs", p.name, l.Width, l.ChartsOutside, l.ClientWidth, l.FiguresCropped)
	}
	if l.DuplicateIDs > 0 {
		t.Errorf("%s at %d px: %d elements repeat an id", p.name, l.Width, l.DuplicateIDs)
	}
	if l.TextsOutside > 0 {
		t.Errorf("%s at %d px: %d chart texts reach past their chart, the first %q", p.name, l.Width, l.TextsOutside, l.TextOutside)
	}
}

// runChromium runs headless Chromium with args (its own profile; as root it needs
// --no-sandbox) and returns its stdout.
func runChromium(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	// A browser that crashes (a signal: on a loaded machine Chromium's zygote may fail to
	// fork) says nothing of the page: it is run once more, and a second crash fails the test.
	for try := 1; ; try++ {
		out, stderr, err := chromiumOnce(t, bin, args)
		var ee *exec.ExitError
		if err != nil && try == 1 && errors.As(err, &ee) && !ee.Exited() {
			t.Logf("%s crashed (%v): running it once more", bin, err)
			continue
		}
		if err != nil {
			t.Fatalf("%s %s: %v\n%.2000s", bin, strings.Join(args, " "), err, stderr)
		}
		return out
	}
}

// chromiumOnce runs headless Chromium once with args, within 2 minutes: its output, its
// stderr and how it ended.
func chromiumOnce(t *testing.T, bin string, args []string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--user-data-dir=" + t.TempDir(), "--virtual-time-budget=10000"}
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(base, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	return out, stderr.String(), err
}

// checkScreenshot decodes the PNG Chromium wrote and checks it is as wide as the viewport.
func checkScreenshot(t *testing.T, path string, width int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if cfg.Width != width {
		t.Errorf("%s is %d px wide, want %d", path, cfg.Width, width)
	}
	t.Logf("screenshot %s", path)
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
