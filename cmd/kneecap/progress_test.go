package main

// The stop rules and the progress table of a sweep, on hand-made levels.

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/sweep"
)

// synthLevel builds a level with a 1 s window holding one successful request per TTFT value
// whose tokens (tps ÷ len(ttfts) each) all arrive inside the window, so the level's output TPS
// is tps, plus errs failed requests.
func synthLevel(index, conc int, tps float64, ttft time.Duration, errs int) (sweep.LevelRun, []sweep.Record) {
	w0 := int64(1e18) + int64(index)*int64(time.Minute)
	run := sweep.LevelRun{Index: index, Concurrency: conc, W0: w0, W1: w0 + int64(time.Second), Steady: true}
	recs := []sweep.Record{{Level: index, Concurrency: conc, Sent: w0, TTFT: ttft, E2E: ttft + 100*time.Millisecond,
		OutputTokens: int(tps), Status: sweep.StatusOK}}
	for i := 0; i < errs; i++ {
		recs = append(recs, sweep.Record{Level: index, Concurrency: conc, Sent: w0 + 1, Status: sweep.StatusError, ErrorClass: sweep.ErrHTTP5xx})
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
		var levels []sweep.Level
		for i, l := range tc.levels {
			r, rr := synthLevel(i, 1<<i, l.tps, l.ttft, l.errs)
			levels = append(levels, sweep.Level{Run: r, Records: rr})
		}
		got := analysis.StopRules{Rules: cfg.Sweep.Stop}.Decide(levels)
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: Decide = %q, want prefix %q", tc.name, got, tc.want)
		}
	}
}

func TestProgressTTY(t *testing.T) {
	var buf bytes.Buffer
	proto := config.Default().Sweep
	p := newProgress(&buf, true, []int{1, 2}, proto)
	p.LevelStarted(0, 1)
	p.Live(sweep.LiveStats{Index: 0, Concurrency: 1, Phase: sweep.PhaseMeasure, Elapsed: time.Hour, OutputTPS: 123.4, TTFTP50: 42 * time.Millisecond, Completed: 7})
	run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
	p.LevelFinished(sweep.Level{Run: run, Records: recs})
	p.close()
	out := buf.String()
	for _, want := range []string{"level 1/2", "123.4 tok/s", "TTFT p50 42.0ms", "out tok/s", "100.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("progress output lacks %q:\n%q", want, out)
		}
	}
	// Without a terminal: no bar, only the table.
	buf.Reset()
	p = newProgress(&buf, false, []int{1, 2}, proto)
	p.LevelStarted(0, 1)
	p.Live(sweep.LiveStats{Index: 0, Concurrency: 1, Phase: sweep.PhaseMeasure, OutputTPS: 1})
	p.LevelFinished(sweep.Level{Run: run, Records: recs})
	if lines := strings.Split(strings.TrimSpace(buf.String()), "\n"); len(lines) != 2 || strings.Contains(buf.String(), "\r") {
		t.Errorf("non-TTY progress should be a header and one row:\n%q", buf.String())
	}
}

// TestProgressExtendedWindow: a window that ran well past --duration says why.
func TestProgressExtendedWindow(t *testing.T) {
	var buf bytes.Buffer
	proto := config.Default().Sweep
	proto.Duration, proto.MaxDuration, proto.MinRequests = 6*time.Second, time.Minute, 100
	p := newProgress(&buf, false, []int{1}, proto)
	run, recs := synthLevel(0, 1, 100, 10*time.Millisecond, 0)
	run.W1 = run.W0 + int64(55800*time.Millisecond)
	p.LevelFinished(sweep.Level{Run: run, Records: recs})
	if want := "note: window 55.8s, past duration 6s: a window grows until the level is steady with at least min_requests 100"; !strings.Contains(buf.String(), want) {
		t.Errorf("progress output lacks %q:\n%s", want, buf.String())
	}
	buf.Reset()
	run.W1 = run.W0 + int64(6200*time.Millisecond) // within 10% of duration: no note
	p.LevelFinished(sweep.Level{Run: run, Records: recs})
	if strings.Contains(buf.String(), "past duration") {
		t.Errorf("a window within 10%% of duration got a note:\n%s", buf.String())
	}
}
