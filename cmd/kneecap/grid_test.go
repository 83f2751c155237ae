package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/grid"
	"github.com/kneecap/kneecap/rundir"
)

// gridBase is the configuration every scenario of the grid test shares: the simulator with
// S = 4 decode slots (max_num_seqs) and a step of 1 ms + 10 µs per running sequence, prefill
// at 20,000,000 tokens/s (a 512-token prompt: 26 µs, so that the knee does not move with the
// prompt), levels 1, 2, 4, 5, 6 (the rise and, two levels more than 5% past the knee, the
// plateau measured; with 1, 2, 4, 8 and S = 3 the knee came out 2.5% low to 6% high, and with
// 1, 2, 4, 6, 8 the level at 8, whose answers take 2 slot turns, missed Little's law by
// 10.6-11.5% in 120 ms windows in 3 runs of 8, which left one plateau level) with short
// windows (of at least 10 completions: a 24-token answer takes 25 ms, and a window of fewer
// breaks Little's law by more than 10% at concurrency 1) and the steady-state target loosened
// to 25% (the engine is steady by construction; what varies is the loaded machine's
// scheduling). The client may move a number by half (client_tolerance 0.5): the test reads
// knees, from throughput, which the client moves only through its load — its own turnaround
// between two requests, about 0.3 ms, 1.1% of a 25 ms answer, moves the knee by as much, well
// within the 10% checked — while at 1 ms steps a read one step late moves a TTFT of 3 ms by a
// third (the kernel's clock cannot see a read's gather) and no token. No level is run again
// (retry_excluded 0: a level a starved client left excluded makes the run inconclusive, as
// before retries). The base's own answers are of 1
// token: a scenario that did not get its output_tokens would not measure its knee.
//
// Its knee (the truth, gridKnee): TPS(c) = c ÷ t(c) up to S, flat beyond (DESIGN §6), except
// that a closed-loop worker's next request waits one step to be admitted, so below S a slot
// gives n tokens every n + 1 steps for answers of n tokens, while past S a queued request
// takes the freed slot in the same step: the rise c·n ÷ ((n + 1)·t) meets the plateau S ÷ t
// at c = S·(n + 1) ÷ n (4.125 for n = 32; TestSimulatorKneeMatchesSlots's "a slot idles one
// step in 33").
const gridBase = `simulator:
  profile: demo
  max_num_seqs: 4
  step_base: 1ms
  step_per_seq: 10us
  prefill_tps: 20000000
  seed: 1
workload:
  input_tokens: {dist: fixed, mean: %d}
  output_tokens: {dist: fixed, mean: %d}
sweep:
  levels: [1, 2, 4, 5, 6]
  warmup: 20ms
  duration: 120ms
  min_requests: 10
  max_duration: 500ms
  ci_target: 0.25
  drain_timeout: 5s
  client_tolerance: 0.5
  retry_excluded: 0
  stop: {plateau: false, overload: false}
`

// gridShapes are the grid test's three shapes (prompt / output tokens). Their knees
// (gridKnee: 4.25, 4.2, 4.167) are close: this engine's knee moves with the answer's length
// only through the slot's idle step, and shapes whose knees lie 10% apart did not measure to
// the formula (answers of 3 and 6 tokens: S 6.61 and a knee 4.93 for the truths 5.33 and
// 4.67, the client's turnaround idling a slot for up to a step more; a think time makes the
// levels miss their concurrency, excluded). A scenario that did not get its own workload is
// caught by DIR/NAME/config.yaml (checkGridKnees), and one that got the base's (answers of 1
// token) misses its knee.
var gridShapes = []struct {
	name    string
	in, out int
}{{"short", 64, 16}, {"long-in", 256, 20}, {"long-out", 16, 24}}

// gridSingle is the shape of gridShapes the standalone sweep measures (the quickest).
const gridSingle = 0

// TestScenarioGrid is issue 15's acceptance of the scenario grid: a 3-scenario grid against
// the simulator writes the combined report with the Pareto chart (PNG and SVG) and a table of
// knees, and each scenario's knee matches a single-scenario sweep of the same shape within
// 5%: the short scenario's that of a standalone sweep of its shape (run after the grid, alone),
// all three the engine's truth within 10% (gridKnee: S·(n + 1) ÷ n, S = 4, n output tokens),
// and each DIR/NAME/config.yaml has its scenario's workload. The grid is made in two runs:
// the first, in-process, interrupted before its first level (exit 130: the first scenario
// interrupted, the others not run, the combined files written anyway); the second `--resume
// DIR` by the kneecap binary (the sweeps' client is not slowed by the race detector, which
// starves it on two cores), which resumes that scenario and runs the other two. Then,
// in-process again, a third `--resume DIR` skips all three (finished). Analyzing and
// comparing grids, and what --resume refuses: TestGridFixtures.
func TestScenarioGrid(t *testing.T) {
	// Not parallel: its knees are the assertion. TestMain lowers the PNGs' density.
	bin := kneecapBinary(t)
	base := t.TempDir()
	gridCfg, single := writeGridConfigs(t, base)
	dir, singleDir := filepath.Join(base, "grid"), filepath.Join(base, "single")
	start := time.Now()
	defer func() { t.Logf("the whole test took %s", time.Since(start).Round(time.Millisecond)) }()

	interrupted, cancel := context.WithCancel(context.Background())
	cancel()
	r := runCmd(func(e *env) { e.interrupt = interrupted }, "sweep", "-c", gridCfg, "-o", dir)
	if exitCode(r.err) != exitInterrupted || !strings.Contains(errString(r.err), "continue the grid with --resume "+dir) {
		t.Fatalf("interrupted grid: exit %d (%v), want 130 and the grid's --resume\n%s", exitCode(r.err), r.err, r.stderr)
	}
	doc := readGrid(t, dir)
	if st := []string{doc.Scenarios[0].Status, doc.Scenarios[1].Status}; st[0] != grid.Interrupted || st[1] != grid.NotRun {
		t.Errorf("after the interrupt: statuses %v, want interrupted, not run", st)
	}
	t.Logf("interrupted grid took %s", time.Since(start).Round(time.Millisecond))

	resumed := startKneecap(t, "sweep", "--resume", dir)
	if code := resumed.exit(t); code != 0 {
		t.Fatalf("resumed grid: exit %d\n%s", code, resumed.stderr.String())
	}
	t.Logf("resumed grid (%s) took %s", bin, time.Since(start).Round(time.Millisecond))
	alone := startKneecap(t, "sweep", "-c", single, "-o", singleDir)
	if code := alone.exit(t); code != 0 {
		t.Fatalf("single sweep: exit %d\n%s", code, alone.stderr.String())
	}
	t.Logf("then the single sweep: %s", time.Since(start).Round(time.Millisecond))
	for _, l := range strings.Split(resumed.stderr.String()+alone.stderr.String(), "\n") {
		if strings.Contains(l, "stopped after") || strings.Contains(l, "kneecap: scenario ") || strings.Contains(l, "resuming") {
			t.Log(l)
		}
	}
	checkGridFiles(t, dir, resumed.stdout.String())
	inconclusive := checkGridKnees(t, readGrid(t, dir), dir, singleDir)
	for _, sc := range readGrid(t, dir).Scenarios {
		// The default SLOs (TTFT p95 ≤ 2 s, TPOT p95 ≤ 50 ms) hold at every level: TPOT is a
		// 1 ms step, TTFT at most a queue of one answer (≤ 26 ms) at concurrency 6; so the SLO
		// point is "at least" the largest valid level — when some level is valid (a client
		// starved by the machine leaves none: inconclusive).
		p := sc.SLOPoint
		if sc.Status != grid.Finished || (inconclusive == "" && (p == nil || !p.AtLeast || !(p.MaxConcurrency >= 1))) {
			t.Errorf("scenario %s: status %s, SLO point %+v; want finished, at least the largest valid level", sc.Name, sc.Status, p)
		}
	}

	r = runCmd(nil, "sweep", "--resume", dir)
	if r.err != nil || strings.Count(r.stderr, "finished before: skipped") != 3 {
		t.Errorf("third --resume: %v, want every scenario skipped:\n%s", r.err, r.stderr)
	}
	if inconclusive != "" {
		t.Skip(inconclusive)
	}
}

// writeGridConfigs writes the grid's configuration (gridBase and gridShapes) and the single
// sweep's (gridBase with the shape gridSingle) into base.
func writeGridConfigs(t *testing.T, base string) (gridFile, single string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name: g\n"+gridBase+"scenarios:\n", 16, 1)
	for _, s := range gridShapes {
		fmt.Fprintf(&b, "  - {name: %s, input_tokens: {mean: %d}, output_tokens: {mean: %d}}\n", s.name, s.in, s.out)
	}
	gridFile, single = filepath.Join(base, "grid.yaml"), filepath.Join(base, "single.yaml")
	lo := gridShapes[gridSingle]
	if err := os.WriteFile(gridFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(single, []byte(fmt.Sprintf("name: single\n"+gridBase, lo.in, lo.out)), 0o644); err != nil {
		t.Fatal(err)
	}
	return gridFile, single
}

// readGrid reads dir/scenarios.json.
func readGrid(t *testing.T, dir string) grid.Doc {
	t.Helper()
	doc, err := grid.ReadDoc(dir)
	if err != nil || len(doc.Scenarios) != len(gridShapes) {
		t.Fatalf("scenarios.json: %v, %+v", err, doc)
	}
	return doc
}

// checkGridFiles checks the grid's own files, each scenario's complete results directory and
// the table of knees on stdout (≤ 80 columns).
func checkGridFiles(t *testing.T, dir, stdout string) {
	t.Helper()
	for _, f := range []string{"config.yaml", rundir.ScenariosFile, "report.md", "report.html", "pareto.png", "pareto.svg"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
			t.Errorf("grid file %s: %v", f, err)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "report.html"))
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, s := range gridShapes {
		for _, f := range []string{"levels.json", "records.jsonl", "analysis.json", "report.html", "throughput.svg"} {
			if _, err := os.Stat(filepath.Join(dir, s.name, f)); err != nil {
				t.Errorf("scenario %s: %v", s.name, err)
			}
		}
		if !strings.Contains(string(html), `href="`+s.name+`/report.html"`) || !strings.Contains(string(md), "("+s.name+"/report.md)") {
			t.Errorf("combined report lacks the link to %s's report", s.name)
		}
	}
	if !strings.Contains(string(html), "<svg") || strings.Contains(string(html), "<script") || !strings.Contains(string(md), "pareto.png") {
		t.Error("combined report: the Pareto chart is not inlined (HTML) or linked (Markdown), or the page has a script")
	}
	if !strings.Contains(string(html), `<div class="narrow"><svg width="288pt"`) {
		t.Error("combined report: the Pareto chart's narrow rendering, shown on a phone, is not inlined")
	}
	if svg, _ := os.ReadFile(filepath.Join(dir, "pareto.svg")); bytes.Contains(svg, []byte(`width="288pt"`)) {
		t.Error("pareto.svg is the narrow rendering, not the 7 in chart")
	}
	i := strings.Index(stdout, "kneecap scenario grid g:")
	if i < 0 {
		t.Fatalf("no table of knees on stdout:\n%s", stdout)
	}
	table := strings.Split(strings.TrimSpace(stdout[i:]), "\n")
	if strings.Join(strings.Fields(table[1]), " ") != "scenario shape knee N knee TPS SLO N max TPS blow-up N status" {
		t.Errorf("table header %q", table[1])
	}
	for j, s := range gridShapes {
		row := table[2+j]
		if !strings.HasPrefix(row, s.name+" ") || !strings.Contains(row, fmt.Sprintf("%d/%d", s.in, s.out)) || !strings.HasSuffix(row, " done") {
			t.Errorf("table row %q, want %s %d/%d … done", row, s.name, s.in, s.out)
		}
	}
	for _, l := range table {
		if n := len([]rune(l)); n > 80 {
			t.Errorf("table line of %d columns: %q", n, l)
		}
	}
}

// gridKnee is the knee of gridBase's engine for answers of n tokens: S·(n + 1) ÷ n, S = 4.
func gridKnee(n int) float64 { return 4 * float64(n+1) / float64(n) }

// checkGridKnees checks each scenario's workload (DIR/NAME/config.yaml), gridSingle's knee
// against the standalone sweep of its shape within 5% (issue 15's acceptance), and every
// knee against the truth (gridKnee) within 10%: with one of the two cores taken by another
// process, long-in measured 4.57 for the truth 4.2 (+8.8%; its plateau levels gained on the
// rise as the starved client's turnaround idled the slots below S), while a scenario run
// with the base's 1-token answers (knee 8, beyond the levels) still misses by far. Every
// scenario is checked; a miss is inconclusive (starved, as the accuracy tests) only when a
// level next to the truth was excluded from the fits, and the run is inconclusive only when
// every miss is.
func checkGridKnees(t *testing.T, doc grid.Doc, dir, singleDir string) (inconclusive string) {
	t.Helper()
	const tol, truthTol = 0.05, 0.10
	var misses, excused []string
	for i, sc := range doc.Scenarios {
		sub := filepath.Join(dir, sc.Name)
		sh := gridShapes[i]
		c, err := config.Read(filepath.Join(sub, "config.yaml"))
		if err != nil || c.Workload.InputTokens.Mean != float64(sh.in) || c.Workload.OutputTokens.Mean != float64(sh.out) || c.Name != "g-"+sc.Name {
			t.Errorf("scenario %s: config.yaml %v: name %q, workload %+v / %+v; want g-%s, %d/%d", sc.Name, err,
				c.Name, c.Workload.InputTokens, c.Workload.OutputTokens, sc.Name, sh.in, sh.out)
		}
		m := readJSON(t, filepath.Join(sub, "analysis.json"))
		truth := gridKnee(sh.out)
		if sc.Knee == nil || !sc.Knee.Concurrency.OK() || math.Abs(float64(sc.Knee.Concurrency)/truth-1) > truthTol {
			miss := fmt.Sprintf("scenario %s: knee %+v, want %.3f within %.0f%% (warnings %v; levels %s)", sc.Name, sc.Knee, truth, 100*truthTol, m["warnings"], levelLines(m))
			misses = append(misses, miss)
			if excludedNear(m, truth) {
				excused = append(excused, miss)
			}
			continue
		}
		t.Logf("scenario %s (%s): knee %.3f (%.1f%% of the truth %.3f), max TPS %.0f", sc.Name, sc.Shape, float64(sc.Knee.Concurrency),
			100*float64(sc.Knee.Concurrency)/truth, truth, float64(sc.MaxTPS))
		if i != gridSingle {
			continue
		}
		sm := readJSON(t, filepath.Join(singleDir, "analysis.json"))
		k, _ := dig(sm, "knee", "concurrency")
		kf, ok := k.(float64)
		if d := math.Abs(float64(sc.Knee.Concurrency)/kf - 1); !ok || d > tol {
			miss := fmt.Sprintf("scenario %s knee %.3f, the standalone sweep of its shape %v: want within %.0f%%", sc.Name, float64(sc.Knee.Concurrency), k, 100*tol)
			misses = append(misses, miss)
			if excludedNear(sm, truth) {
				excused = append(excused, miss)
			}
		} else {
			t.Logf("scenario %s knee %.3f, standalone %.3f: %.1f%% apart", sc.Name, float64(sc.Knee.Concurrency), kf, 100*d)
		}
	}
	if len(misses) > 0 && len(excused) == len(misses) {
		return "inconclusive, a level next to the knee excluded (a starved client): " + strings.Join(misses, "; ")
	}
	for _, m := range misses {
		t.Error(m)
	}
	return ""
}

// levelLines describes the levels of the analysis m for a failure's message: concurrency,
// valid, TPS and the client's effect on the offered load.
func levelLines(m map[string]any) string {
	ls, _ := m["levels"].([]any)
	var b strings.Builder
	for _, l := range ls {
		lm, _ := l.(map[string]any)
		load, _ := dig(lm, "client_effect", "offered_load")
		fmt.Fprintf(&b, "[c %v valid %v imprecise %v tps %v ±%v load effect %v] ", lm["concurrency"], lm["valid"], lm["imprecise"],
			lm["output_tps"], lm["output_tps_ci95"], load)
	}
	return b.String()
}

// excludedNear reports whether a level of the analysis m next to the concurrency c was
// excluded from the fits, measured on a machine the client self-check found busy, or kept
// though imprecise or noisier than the knee's tolerance (its
// TPS CI half-width over 10% of it; on a quiet machine this engine's levels measure within
// ±3–6%, beside two busy loops up to ±14%, which put the fitted S at 4.68 for the truth 4.2):
// the largest level at or below it, or one of the two above (the plateau-onset rule needs two
// valid levels past the knee).
func excludedNear(m map[string]any, c float64) bool {
	ls, _ := m["levels"].([]any)
	var below, above []float64
	valid := map[float64]bool{}
	for _, l := range ls {
		lm, _ := l.(map[string]any)
		n, _ := lm["concurrency"].(float64)
		v, _ := lm["valid"].(bool)
		imprecise, _ := lm["imprecise"].(bool)
		tps, _ := lm["output_tps"].(float64)
		ci, _ := lm["output_tps_ci95"].(float64)
		// A level the client self-check noted on a busy machine, or found client-bound, was
		// measured by a starved client (beside a `yes` loop a standalone knee came out 4.71
		// for the truth 4.25, 9.7% from the grid's).
		cb, _ := lm["client_bound"].(bool)
		busy := cb || strings.Contains(fmt.Sprint(lm["notes"]), "machine busy")
		valid[n] = v && !imprecise && ci <= 0.10*tps && !busy
		if n <= c {
			below = append(below, n)
		} else {
			above = append(above, n)
		}
	}
	sort.Float64s(below)
	sort.Float64s(above)
	near := above[:min(2, len(above))]
	if len(below) > 0 {
		near = append(near, below[len(below)-1])
	}
	for _, n := range near {
		if !valid[n] {
			return true
		}
	}
	return false
}
