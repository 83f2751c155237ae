package live

// The stop rules and the progress table of a sweep, on hand-made levels.

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/sweep"
)

// synthLevel builds a level with a 1 s window holding one successful request per TTFT value
// whose tokens (tps ÷ len(ttfts) each) all arrive inside the window, so the level's output TPS
// is tps, plus errs failed requests.
func synthLevel(index, conc int, tps float64, ttft time.Duration, errs int) (record.LevelRun, []record.Record) {
	w0 := int64(1e18) + int64(index)*int64(time.Minute)
	run := record.LevelRun{Index: index, Concurrency: conc, W0: w0, W1: w0 + int64(time.Second), Steady: true}
	recs := []record.Record{{Level: index, Concurrency: conc, Sent: w0, TTFT: ttft, E2E: ttft + 100*time.Millisecond,
		OutputTokens: int(tps), Status: record.StatusOK}}
	for i := 0; i < errs; i++ {
		recs = append(recs, record.Record{Level: index, Concurrency: conc, Sent: w0 + 1, Status: record.StatusError, ErrorClass: record.ErrHTTP5xx})
	}
	return run, recs
}

func TestJudge(t *testing.T) {
	type lv struct {
		tps  float64
		ttft time.Duration
		errs int
	}
	ms := time.Millisecond
	for _, tc := range []struct {
		name   string
		levels []lv
		want   string // prefix of the reason; "" = continue
	}{
		{"growing", []lv{{100, 10 * ms, 0}, {190, 10 * ms, 0}, {350, 12 * ms, 0}}, ""},
		{"plateau", []lv{{100, 10 * ms, 0}, {500, 12 * ms, 0}, {510, 20 * ms, 0}, {515, 40 * ms, 0}}, "plateau"},
		// Flat but TTFT has not grown 3×: not saturated yet (DESIGN §3).
		{"flat without queueing", []lv{{100, 10 * ms, 0}, {500, 12 * ms, 0}, {510, 20 * ms, 0}, {515, 25 * ms, 0}}, ""},
		{"overload", []lv{{100, 10 * ms, 0}, {500, 12 * ms, 0}, {440, 50 * ms, 0}}, "overload"},
		{"errors", []lv{{100, 10 * ms, 0}, {200, 10 * ms, 1}}, "error rate 50.0%"},
		{"ttft", []lv{{100, 10 * ms, 0}, {200, 21 * time.Second, 0}}, "TTFT p95"},
	} {
		cfg := config.Default()
		var levels []record.Level
		for i, l := range tc.levels {
			r, rr := synthLevel(i, 1<<i, l.tps, l.ttft, l.errs)
			levels = append(levels, record.Level{Run: r, Records: rr})
		}
		got := analysis.StopRules{Rules: cfg.Sweep.Stop}.Decide(levels)
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: Decide = %q, want prefix %q", tc.name, got, tc.want)
		}
	}
}

// fakeClock is a clock the test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func TestProgressTTY(t *testing.T) {
	var buf bytes.Buffer
	proto := config.Default().Sweep
	p := newDisplay(&buf, true, []int{1, 2}, proto)
	p.width = func() int { return 200 }
	p.LevelStarted(0, 1)
	p.Live(sweep.LiveStats{Index: 0, Concurrency: 1, Phase: record.PhaseMeasure, Elapsed: 7 * time.Second, OutputTPS: 123.4, TTFTP50: 42 * time.Millisecond, Completed: 7})
	run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
	p.LevelFinished(record.Level{Run: run, Records: recs})
	p.Close()
	out := buf.String()
	for _, want := range []string{clearLine + "level 1/2  c=1  warmup", clearLine + "level 1/2  c=1  measure 7s", "ETA ", "123 tok/s", "TTFT p50 42.0ms", "7 done", clearLine + report.NewLevelTable(false, false, false).Header(), "    100  "} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q:\n%q", want, out)
		}
	}
	// Without a terminal: no status line, only the table.
	buf.Reset()
	p = newDisplay(&buf, false, []int{1, 2}, proto)
	p.LevelStarted(0, 1)
	p.Live(sweep.LiveStats{Index: 0, Concurrency: 1, Phase: record.PhaseMeasure, OutputTPS: 1})
	p.LevelFinished(record.Level{Run: run, Records: recs})
	if lines := strings.Split(strings.TrimSpace(buf.String()), "\n"); len(lines) != 2 || strings.ContainsAny(buf.String(), "\r\x1b") {
		t.Errorf("non-TTY progress should be a header and one row:\n%q", buf.String())
	}
}

// TestProgressFitsWidth: every status line is erased before it is drawn and is shorter than
// the terminal, at any width, also with a long rate and large numbers.
func TestProgressFitsWidth(t *testing.T) {
	for _, width := range []int{20, 40, 80, 200} {
		var buf bytes.Buffer
		p := newDisplay(&buf, true, []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}, config.Default().Sweep)
		p.width = func() int { return width }
		p.rates = []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 1234.5}
		p.LevelStarted(9, 512)
		p.Live(sweep.LiveStats{Index: 9, Concurrency: 512, Phase: record.PhaseMeasure, Elapsed: 2 * time.Hour, OutputTPS: 123456.7, TTFTP50: 12 * time.Second, Completed: 1234567})
		draws := strings.Split(buf.String(), clearLine)
		if len(draws) != 3 || draws[0] != "" {
			t.Fatalf("width %d: want two draws, each after an erase: %q", width, buf.String())
		}
		for _, d := range draws[1:] {
			if n := len([]rune(d)); n >= width || strings.ContainsAny(d, "\r\n") {
				t.Errorf("width %d: status line of %d characters: %q", width, n, d)
			}
		}
	}
}

// TestProgressETA: the sweep's fraction and time left come from the planned levels' warmup +
// duration + cooldown; the fraction never goes backwards, also while a window is extended
// past its duration; a refiner that adds no level shortens the plan.
func TestProgressETA(t *testing.T) {
	proto := config.Default().Sweep
	proto.Warmup, proto.Duration, proto.Cooldown, proto.Refine = 2*time.Second, 8*time.Second, time.Second, 1
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	var buf bytes.Buffer
	p := newDisplay(&buf, true, []int{1, 2, 4}, proto)
	p.now, p.refine = clk.now, proto.Refine
	frac := func(el time.Duration) (float64, time.Duration) { return p.eta.at(el) }

	p.LevelStarted(0, 1)
	// 3 planned levels and 1 that may be added: 4 × 10 s and 3 cooldowns of 1 s.
	if f, left := frac(0); f != 0 || left != 43*time.Second {
		t.Fatalf("at the start: %.3f, %s left; want 0, 43s", f, left)
	}
	last := 0.0
	step := func(d, el time.Duration) {
		t.Helper()
		clk.advance(d)
		f, _ := frac(el)
		if f < last {
			t.Errorf("the fraction went back from %.3f to %.3f", last, f)
		}
		last = f
	}
	step(5*time.Second, 5*time.Second)
	if f, left := frac(5 * time.Second); left != 38*time.Second || !near(f, 5.0/43) {
		t.Errorf("5 s in: %.3f, %s left; want %.3f, 38s", f, left, 5.0/43)
	}
	// The window is extended to 30 s: the time left stays, the fraction still grows.
	for el := 10 * time.Second; el <= 30*time.Second; el += 5 * time.Second {
		step(5*time.Second, el)
	}
	clk.advance(time.Second) // cooldown
	p.LevelStarted(1, 2)
	step(0, 0)
	// The refiner adds none: the last level's length leaves the plan.
	p.Adding(0, "")
	p.LevelStarted(2, 4)
	if _, left := frac(0); left != 10*time.Second {
		t.Errorf("the last planned level, none added: %s left, want 10s", left)
	}
	step(0, 0)
}

// near reports whether a and b agree to 1e-9.
func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestProgressTableMatchesFinal: the live table's header and rows are the final summary's,
// for a closed-loop and an arrival-rate level.
func TestProgressTableMatchesFinal(t *testing.T) {
	for _, rate := range []bool{false, true} {
		var buf bytes.Buffer
		p := newDisplay(&buf, false, []int{1}, config.Default().Sweep)
		run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
		if rate {
			run.OfferedRPS = 2
		}
		l := record.Level{Run: run, Records: recs}
		p.LevelFinished(l)
		lv := analysis.Summarize([]record.Level{l}, analysis.DefaultOptions())[0]
		tab := report.NewLevelTable(rate, false, false)
		if want := tab.Header() + tab.Row(&lv); buf.String() != want {
			t.Errorf("rate %v: live table\n%s\nwant the final table's lines\n%s", rate, buf.String(), want)
		}
	}
}

// TestProgressExtendedWindow: a window that ran well past --duration says why.
func TestProgressExtendedWindow(t *testing.T) {
	var buf bytes.Buffer
	proto := config.Default().Sweep
	proto.Duration, proto.MaxDuration, proto.MinRequests = 6*time.Second, time.Minute, 100
	p := newDisplay(&buf, false, []int{1}, proto)
	run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
	run.W1 = run.W0 + int64(55800*time.Millisecond)
	p.LevelFinished(record.Level{Run: run, Records: recs})
	if want := "note: window 55.8s, past duration 6s: a window grows until the level is steady with at least min_requests 100"; !strings.Contains(buf.String(), want) {
		t.Errorf("progress output lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	run.W1 = run.W0 + int64(6200*time.Millisecond) // within 10% of duration: no note
	p.LevelFinished(record.Level{Run: run, Records: recs})
	if strings.Contains(buf.String(), "past duration") {
		t.Errorf("a window within 10%% of duration got a note:\n%s", buf.String())
	}
}

// TestProgressHitColumn: a sweep a prefix cache serves (launch.Sweep.ExpectsPrefixCache)
// shows the hit column from its first level, "—" while that level measured none.
func TestProgressHitColumn(t *testing.T) {
	var buf bytes.Buffer
	p := newDisplay(&buf, false, []int{1}, config.Default().Sweep)
	p.hit = true
	run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
	p.LevelFinished(record.Level{Run: run, Records: recs})
	if tab := report.NewLevelTable(false, false, false).WithPrefixCache(); !strings.HasPrefix(buf.String(), tab.Header()) || !strings.Contains(buf.String(), "—") {
		t.Errorf("live table without the hit column:\n%s", buf.String())
	}
}

// TestProgressEnergyColumns: with --wide the live table has the final table's J/tok and GPU W
// columns when its first level read GPU telemetry, and not without it.
func TestProgressEnergyColumns(t *testing.T) {
	for _, gpu := range []bool{false, true} {
		var buf bytes.Buffer
		p := newDisplay(&buf, false, []int{1}, config.Default().Sweep)
		p.wide = true
		run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
		if gpu {
			run.GPU = &record.GPUStats{Source: record.GPUFromDCGM, Samples: 3, PowerMeanW: 300, PowerP95W: 310}
		}
		l := record.Level{Run: run, Records: recs}
		p.LevelFinished(l)
		lv := analysis.Summarize([]record.Level{l}, analysis.DefaultOptions())[0]
		tab := report.NewLevelTable(false, true, lv.InputTokens.Mean.OK() || lv.OutputTokens.Mean.OK())
		if gpu {
			tab = tab.WithEnergy()
		}
		if out := buf.String(); !strings.HasPrefix(out, tab.Header()) || strings.Contains(out, "J/tok") != gpu {
			t.Errorf("GPU telemetry %v: live table\n%s\nwant the header\n%s", gpu, out, tab.Header())
		}
	}
}

// TestProgressStopAdding: the display says why no further level is added (the refiner's
// reason; launch.TestRefinerStopsOnFailedAddedLevel).
func TestProgressStopAdding(t *testing.T) {
	var buf strings.Builder
	newDisplay(&buf, false, []int{1, 2}, config.Default().Sweep).StopAdding("added level concurrency 4 had error rate 100.0%")
	if want := "kneecap: no more levels added: added level concurrency 4 had error rate 100.0%\n"; buf.String() != want {
		t.Errorf("progress output %q, want %q", buf.String(), want)
	}
}

// TestStoppedNamesRetriedAndAdded: the end line gives the elapsed time and the stop reason,
// then the levels run again and added (a rate level by its offered rate), not the planned or
// interrupted ones.
func TestStoppedNamesRetriedAndAdded(t *testing.T) {
	t.Parallel()
	first := 0
	out := sweep.Outcome{StopReason: "plateau", Elapsed: 62340 * time.Millisecond, Levels: []record.LevelRun{
		{Concurrency: 4}, {Concurrency: 64, RetryOf: &first}, {Concurrency: 25, Refine: "knee"},
		{Concurrency: 512, OfferedRPS: 20.7, Refine: "capacity"}, {Concurrency: 102, Refine: "slo", Interrupted: true},
	}}
	var buf strings.Builder
	newDisplay(&buf, false, []int{4}, config.Default().Sweep).Stopped(out)
	if want := "kneecap: stopped after 1m2.3s: plateau; then retried 64; then added 25, 20.7 requests/s\n"; buf.String() != want {
		t.Errorf("end line %q, want %q", buf.String(), want)
	}
}
