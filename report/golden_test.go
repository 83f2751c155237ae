package report_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// checkGolden compares got with the golden file testdata/golden/name byte for byte;
// -update rewrites the file instead.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
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
		t.Fatalf("%v (run go test ./report -run Golden -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./report -run Golden -update rewrites it; review the diff):\n%s", path, firstDiff(got, want))
	}
}

// firstDiff shows the first line where got and want differ.
func firstDiff(got, want []byte) string {
	g, w := bytes.Split(got, []byte("\n")), bytes.Split(want, []byte("\n"))
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl []byte
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if !bytes.Equal(gl, wl) {
			return "line " + strconv.Itoa(i+1) + ":\n got  " + string(gl) + "\n want " + string(wl)
		}
	}
	return "(same lines, different bytes)"
}

// reportCharts are the chart files kneecap analyze hands report.Markdown: the dashboard
// first, then the single charts.
var reportCharts = []string{"dashboard.png", "throughput.png", "ttft.png", "tpot.png", "latency_vs_throughput.png", "qps.png"}

// TestGoldenReports pins the console summary, report.md and report.html (without charts) of
// fixed analyses (analysistest) byte for byte: any change of their text fails here.
// Regenerate with `go test ./report -run Golden -update` and review the diff before
// committing.
func TestGoldenReports(t *testing.T) {
	for _, f := range []struct {
		name string
		res  func() *analysis.Result
	}{
		{"saturating", analysistest.Saturating},
		{"with_server", analysistest.WithServer},
		{"errors_heavy", analysistest.ErrorsHeavy},
	} {
		t.Run(f.name, func(t *testing.T) {
			var c, m, h bytes.Buffer
			if err := report.Console(&c, f.res()); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(f.name, "console.txt"), c.Bytes())
			if err := report.Markdown(&m, f.res(), reportCharts); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(f.name, "report.md"), m.Bytes())
			if err := report.HTML(&h, f.res(), nil); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(f.name, "report.html"), h.Bytes())
		})
	}
}

// degraded is the saturating fixture after a change that costs a fifth of its throughput:
// max TPS, knee TPS, TPS at the SLO and goodput fall by 20%, the knee and SLO point stay.
func degraded() *analysis.Result {
	r := analysistest.Saturating()
	r.Meta.Name = "after"
	r.Throughput.MaxTPS *= 0.8
	r.Knee.TPS *= 0.8
	r.SLO.TPS *= 0.8
	r.SLO.GoodputQPS *= 0.8
	return r
}

// TestGoldenCompare pins compare.md, compare.html (without charts) and the compare console table of fixed runs: the
// saturating fixture against the linear twenty-level plan, and against its degraded copy
// under a 10% regression gate.
func TestGoldenCompare(t *testing.T) {
	base := analysistest.Saturating()
	after := degraded()
	gate := &analysis.GateReport{Labels: []string{"before", "after"}, MaxDrop: 0.1, Checks: [][]analysis.GateCheck{analysis.Gate(base, after, 0.1)},
		Warnings: []string{"after was analyzed under other SLOs than before (fixture): its SLO figures do not compare"}}
	charts := []string{"compare_throughput.png", "compare_latency.png"}
	for _, c := range []struct {
		name   string
		runs   []*analysis.Result
		labels []string
		gate   *analysis.GateReport
	}{
		{"compare", []*analysis.Result{base, analysistest.TwentyLevels()}, []string{"h100", "a100"}, nil},
		{"compare_gate", []*analysis.Result{base, after}, []string{"before", "after"}, gate},
	} {
		t.Run(c.name, func(t *testing.T) {
			var md bytes.Buffer
			if err := report.Compare(&md, c.runs, c.labels, charts, c.gate); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(c.name, "compare.md"), md.Bytes())
			var h bytes.Buffer
			if err := report.CompareHTML(&h, c.runs, c.labels, nil, c.gate); err != nil {
				t.Fatal(err)
			}
			checkGolden(t, filepath.Join(c.name, "compare.html"), h.Bytes())
			checkCompareConsole(t, c.name, c.runs, c.labels, c.gate)
		})
	}
}

// checkCompareConsole pins the compare console of runs in dir/console.txt (the default
// columns, every line within report.ConsoleWidth) and dir/console_wide.txt (--wide).
func checkCompareConsole(t *testing.T, dir string, runs []*analysis.Result, labels []string, gate *analysis.GateReport) {
	t.Helper()
	var con, wide bytes.Buffer
	if err := report.CompareConsole(&con, runs, labels, gate); err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(con.String(), "\n") {
		if n := utf8.RuneCountInString(line); n > report.ConsoleWidth {
			t.Errorf("%s: console line %d is %d columns wide, over %d: %q", dir, i+1, n, report.ConsoleWidth, line)
		}
	}
	checkGolden(t, filepath.Join(dir, "console.txt"), con.Bytes())
	if err := report.CompareConsoleWith(&wide, runs, labels, gate, report.CompareConsoleOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join(dir, "console_wide.txt"), wide.Bytes())
}
