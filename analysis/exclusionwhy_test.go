package analysis

import (
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestExcludedReasonOnce: a level the sweep found not steady carries the sweep's note and the
// analysis's own "invalid: not steady" note (levels[].notes keeps both); the warning that
// excludes it names the reason once (issue 26: "sweep: not steady …; invalid: not steady …").
func TestExcludedReasonOnce(t *testing.T) {
	t.Parallel()
	const c, n = 4, 40
	var recs []record.Record
	for w := range c {
		for s := range n {
			recs = append(recs, record.Record{Concurrency: c, Worker: w, Seq: s, Sent: int64(s)*sec + int64(w)*sec/c, TTFT: 100 * time.Millisecond,
				E2E: time.Second, Chunks: us(0.1, 0.4, 0.7, 1.0), OutputTokens: 4, PromptTokens: 10, Status: record.StatusOK})
		}
	}
	for _, tc := range []struct {
		name, reason, note, once string
	}{
		{"test failed", "the steady-state test failed (target CI half-width 5.0%, no material trend)",
			"not steady after 20s: 95% CI half-width 6.2% of mean TPS (target 5.0%), trend p = 0.012 (needs > 0.05)", "not steady"},
		{"server silent", "the server did not answer", "ended after 20s of measurement: the server did not answer", "the server did not answer"},
	} {
		run := record.LevelRun{Concurrency: c, W0: 5 * sec, W1: 25 * sec, NotSteadyReason: tc.reason, Notes: []string{tc.note}, CIHalfWidth: 0.062, TrendP: 0.012}
		lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
		if got := strings.Count(strings.Join(lv.Notes, "; "), tc.once); got != 2 {
			t.Fatalf("%s: the notes %q say %q %d times, want 2 (the sweep's and the analysis's)", tc.name, lv.Notes, tc.once, got)
		}
		res := Analyze([]Level{lv}, Meta{}, DefaultOptions())
		var w string
		for _, s := range res.Warnings {
			if strings.Contains(s, "excluded from fits") {
				w = s
			}
		}
		if got := strings.Count(w, tc.once); got != 1 {
			t.Errorf("%s: the warning says %q %d times, want once: %q", tc.name, tc.once, got, w)
		}
		if !strings.Contains(w, tc.note) {
			t.Errorf("%s: the warning %q lost the sweep's note %q", tc.name, w, tc.note)
		}
		if got := strings.Join(res.Levels[0].Notes, "; "); strings.Count(got, tc.once) != 2 {
			t.Errorf("%s: levels[].notes changed: %q", tc.name, got)
		}
	}
}

// TestExclusionWhyDemoNotes: the notes of two levels a demo sweep on a busy machine excluded
// (a retried client-bound level, and one also kept as imprecise before Little's law excluded
// it): the warning gives the client effect, imprecise and not steady once each, the retry's note
// keeping only the reason of the run it repeated, and loses no other reason; a client-bound
// note on TTFT stays beside the sweep's client-bound note on ITL (another cause).
func TestExclusionWhyDemoNotes(t *testing.T) {
	t.Parallel()
	const clk = " (latencies on the kernel's clock: chunks late reads gathered, late sends; the load from the client's turnaround or lateness)"
	for _, tc := range []struct {
		notes      []string
		once, kept []string
	}{
		{[]string{"sweep: run again with 2× the window (duration 6s, max_duration 12s): level 3 was excluded, client-bound: client effect on ITL p50 1.7% > tolerance 1.0%" + clk,
			"sweep: client-bound: client effect on ITL p50 1.6% > tolerance 1.0%" + clk + "; the numbers may describe the load generator, not the server",
			"invalid: client-bound: client effect on ITL p50 1.6% > tolerance 1.0%" + clk},
			[]string{"client effect on", "kernel's clock"}, []string{"level 3 was excluded, client-bound;", "ITL p50 1.6%"}},
		{[]string{"sweep: not steady after 12s: 95% CI half-width 31.2% of mean TPS (target 10.6%), trend p = 0.285 (needs > 0.05)",
			"sweep: imprecise, not drifting: no material trend by max_duration; its numbers stand with the CI they reached (TPS ±31.2%, 128 completions)",
			"sweep: machine busy: run-queue wait 98% of the window > 20% (the machine is busy with other work); the client fell behind",
			"imprecise (kept): no material trend by max_duration, but the steady-state test failed (target CI half-width 10.6%, no material trend); TPS CI half-width 31.2% of mean (target 10.6%)",
			"invalid: Little's-law error 12.7% > 10% (QPS × mean E2E vs achieved concurrency)"},
			[]string{"imprecise", "not steady", "no material trend by max_duration"}, []string{"machine busy", "invalid: Little's-law error 12.7%"}},
		// The same label with another cause: the TTFT's note stays beside the sweep's ITL one.
		{[]string{"sweep: client-bound: client effect on ITL p50 1.6% > tolerance 1.0%" + clk + "; the numbers may describe the load generator, not the server",
			"invalid: client-bound: client effect on TTFT p50 3.0% > tolerance 1.0%" + clk},
			[]string{"ITL p50 1.6%", "TTFT p50 3.0%"}, []string{"invalid: client-bound: client effect on TTFT p50 3.0%"}},
	} {
		why := exclusionWhy(tc.notes)
		for _, s := range tc.once {
			if n := strings.Count(why, s); n != 1 {
				t.Errorf("%q says %q %d times, want once", why, s, n)
			}
		}
		for _, s := range tc.kept {
			if !strings.Contains(why, s) {
				t.Errorf("%q lost %q", why, s)
			}
		}
	}
}
