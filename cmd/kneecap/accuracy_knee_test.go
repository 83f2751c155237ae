package main

// The knee of the accuracy sweeps (accuracy_test.go): the headline knee by the plateau-onset
// rule, the efficient point and the TTFT blow-up against the simulator's ground truth.

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSimulatorKneeMatchesSlots sweeps the simulator end to end (real loopback HTTP, the
// go-openai client, the analysis) with max_num_seqs S = 4, 8 and 16 and checks the answers
// against the engine's ground truth (DESIGN §6, issue 12; S = 32 is the demo's, below):
//
//   - the headline knee is the plateau onset (knee.rule plateau_onset) within ±5% of the
//     engine's knee S·33 ÷ 32 (kneeConfig's answers of 32 tokens: a closed-loop slot idles
//     one step in 33, TestScenarioGrid's gridKnee), with its bootstrap 95% interval inside
//     [0.9·S, 1.1·S] (a busy machine's client turnaround idles a slot longer: 4.20 for S = 4
//     beside a `yes` loop, 1.9% past 4.125 and 5.1% past S);
//   - the efficient point, where one more doubling adds < 10%, within ±10% of the engine's:
//     the step is b + p·n for n running sequences, b = 5 ms, p = 50 µs (kneeConfig), so
//     X(N) = N ÷ (b + p·N) up to S and flat beyond, and X(2N) < 1.1·X(N) for S/2 ≤ N ≤ S from
//     N = S ÷ (1.1 + 0.1·p·S ÷ b) = S ÷ (1.1 + 0.001·S): 0.91·S at S = 4, 0.90·S at 8 and 16;
//   - the TTFT blow-up within ±25% of S, where requests start queueing for a slot.
//
// The efficient point comes out about 3% high too (a slot idles one step in 33).
func TestSimulatorKneeMatchesSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("three simulator sweeps, about 15 s together")
	}
	for _, S := range []int{4, 8, 16} {
		t.Run(fmt.Sprintf("S=%d", S), func(t *testing.T) {
			sw := accuracyRun(t, fmt.Sprintf("knee-%d", S))
			s := float64(S)
			checkKnee(t, sw, S, s*33/32, 0.05, [2]float64{0.9 * s, 1.1 * s})
			m := readJSON(t, filepath.Join(sw.dir, "analysis.json"))
			eff := s / (1.1 + 0.001*s)
			checkNumber(t, m, "efficient point", []string{"efficient_point", "concurrency"}, eff, 0.10)
			checkNumber(t, m, "TTFT blow-up", []string{"ttft_blowup", "concurrency"}, s, 0.25)
			t.Logf("S=%d: sweep and analysis took %s (the group of five, at once)", S, sw.took.Round(time.Millisecond))
		})
	}
}

// TestDemoKneeMatchesSlots: the demo engine (demoConfig: its 32 slots and step 4 ms + 250 µs
// at twice the speed, refine 2) puts the headline knee within ±5% of 32 with its interval
// inside [28.8, 35.2] (issue 12's acceptance), by the plateau-onset rule. Its rise bends well
// before S (X(16) = 75% of the plateau), where the marginal-gain rule said 24.5 for 32 slots:
// that is now the efficient point, 0.77·S = 24.6 on the engine's curve (X(2N) = 1.1·X(N) at
// N = x·b ÷ (1 − x·p), x = X(S) ÷ 1.1), within ±10%.
func TestDemoKneeMatchesSlots(t *testing.T) {
	if testing.Short() {
		t.Skip("a demo sweep, about 20 s")
	}
	sw := accuracyRun(t, "demo")
	checkKnee(t, sw, 32, 32, 0.05, [2]float64{28.8, 35.2})
	m := readJSON(t, filepath.Join(sw.dir, "analysis.json"))
	const b, p, S = 4e-3, 250e-6, 32.0
	x := S / (b + p*S) / 1.1
	checkNumber(t, m, "efficient point", []string{"efficient_point", "concurrency"}, x*b/(1-x*p), 0.10)
	t.Logf("demo: sweep and analysis took %s (the group of five, at once)", sw.took.Round(time.Millisecond))
}

// starved reports why a run proves nothing, or "": levels excluded for the client (their
// notes name the self-check's verdict, client-bound: the client's threads waited for a CPU
// another process took, or Go's scheduler lagged; or its machine-busy note), levels the
// self-check noted on a busy machine, or kept though imprecise (a CI wider than its target by max_duration). The
// simulated engine is steady by construction, so these are the client's starvation; a level
// excluded for another reason alone (not steady, Little's law off, errors) is not, and fails
// the test that sees it rather than skipping it.
func starved(m map[string]any) string {
	ws, _ := m["warnings"].([]any)
	for _, x := range ws {
		s, _ := x.(string)
		if why := clientExclusion(s); why != "" {
			return why
		}
	}
	if strings.Contains(fmt.Sprint(m["warnings"]), "kept though imprecise") {
		// Kept with its wider interval (DESIGN §4.1), which widens the knee's: the engine is
		// steady by construction, so the machine was noisy.
		return "a level of a steady engine was imprecise (a noisy machine)"
	}
	// The client self-check's note on a level it kept (DESIGN §3.3): the machine's run queue
	// or scheduling held the client back, within the tolerance of every estimate, which
	// still moves a steady engine's levels by a few per cent.
	ls, _ := m["levels"].([]any)
	for _, l := range ls {
		lm, _ := l.(map[string]any)
		if strings.Contains(fmt.Sprint(lm["notes"]), "machine busy") {
			return fmt.Sprintf("the client self-check found the machine busy at concurrency %v", lm["concurrency"])
		}
	}
	return ""
}

// clientExclusion returns why warning w, a level's exclusion (analysis.levelExcluded: "level
// … excluded from fits: NOTES", "… excluded from the analysis: NOTES" on a rate axis), was the
// client's, or "" when w is no exclusion or its notes name no client cause: the self-check's
// verdict ("client-bound: …") or its note on a busy machine ("machine busy: …").
func clientExclusion(w string) string {
	_, notes, ok := strings.Cut(w, " excluded from fits: ")
	if !ok {
		_, notes, ok = strings.Cut(w, " excluded from the analysis: ")
	}
	if !ok {
		return ""
	}
	for _, cause := range []string{"client-bound", "machine busy"} {
		if strings.Contains(notes, cause+": ") {
			return "the machine starved the client (a level excluded, " + cause + ")"
		}
	}
	return ""
}

// checkKnee checks the sweep's headline knee: read by the plateau-onset rule, within ±tol of
// want (the engine's knee of S slots), its interval inside within. A miss on a starved
// machine skips the test.
func checkKnee(t *testing.T, sw *accuracySweep, S int, want, tol float64, within [2]float64) {
	t.Helper()
	m := readJSON(t, filepath.Join(sw.dir, "analysis.json"))
	k, _ := dig(m, "knee", "concurrency")
	rule, _ := dig(m, "knee", "rule")
	iv, _ := dig(m, "knee", "interval")
	c, _ := k.(float64)
	lohi, _ := iv.([]any)
	var lo, hi float64
	if len(lohi) == 2 {
		lo, _ = lohi[0].(float64)
		hi, _ = lohi[1].(float64)
	}
	bad := rule != "plateau_onset" || math.Abs(c/want-1) > tol || !(lo >= within[0] && hi <= within[1] && lo <= c && c <= hi)
	if why := starved(m); bad && why != "" {
		t.Skipf("knee %v (%v, interval %v): inconclusive, %s (warnings %v)", k, rule, iv, why, m["warnings"])
	}
	if bad {
		reason, _ := dig(m, "knee", "rule_reason")
		t.Errorf("knee %v by %v (%v), interval %v; want the plateau onset within ±%.0f%% of %.3f (S = %d), interval inside [%.1f, %.1f] (warnings %v)",
			k, rule, reason, iv, tol*100, want, S, within[0], within[1], m["warnings"])
	}
	t.Logf("S=%d: knee %.3f (%.1f%% of S), interval [%.3f, %.3f], rule %v", S, c, 100*c/float64(S), lo, hi, rule)
}

// checkNumber checks that the number at keys lies within ±tol of want (relative); a miss on
// a starved machine skips the test.
func checkNumber(t *testing.T, m map[string]any, name string, keys []string, want, tol float64) {
	t.Helper()
	v, ok := dig(m, keys...)
	f, isNum := v.(float64)
	bad := !ok || !isNum || math.Abs(f/want-1) > tol
	if why := starved(m); bad && why != "" {
		t.Skipf("%s: %v: inconclusive, %s (warnings %v)", name, v, why, m["warnings"])
	}
	if bad {
		t.Errorf("%s at %v, not within ±%.0f%% of %.2f (warnings %v)", name, v, tol*100, want, m["warnings"])
		return
	}
	t.Logf("%s at %.2f (%.0f%% of %.2f)", name, f, 100*f/want, want)
}

// TestStarvedOnlyForTheClient: starved skips a run only for the client's causes, in the
// analysis's own texts (analysis.levelExcluded over the notes of validity and the client
// self-check): a level excluded as client-bound or with a machine-busy note, a kept level's
// machine-busy note, an imprecise level; a level excluded for another reason (not steady) is
// no excuse.
func TestStarvedOnlyForTheClient(t *testing.T) {
	warn := func(w string) map[string]any { return map[string]any{"warnings": []any{w}} }
	for _, tc := range []struct {
		m       map[string]any
		starved bool
	}{
		{warn("level concurrency 8 excluded from fits: client-bound: scheduling latency p99 3ms > 1ms"), true},
		{warn("level offered 2.50 requests/s excluded from the analysis: machine busy: run queue 3 > 2; the client fell behind; not steady (CI half-width 9.0% of mean, trend p = 0.01)"), true},
		{warn("level concurrency 8 kept though imprecise (short of its CI target), with no material trend by max_duration: …"), true},
		{map[string]any{"levels": []any{map[string]any{"concurrency": 4.0, "notes": []any{"machine busy: run queue 3 > 2; the client's effect on every number within tolerance"}}}}, true},
		{warn("level concurrency 8 excluded from fits: not steady (CI half-width 9.0% of mean, trend p = 0.01)"), false},
		{warn("level concurrency 8 excluded from fits: Little's-law error 12.0% > 10% (QPS × mean E2E vs achieved concurrency)"), false},
		{map[string]any{}, false},
	} {
		if why := starved(tc.m); (why != "") != tc.starved {
			t.Errorf("starved(%v) = %q, want starved %t", tc.m, why, tc.starved)
		}
	}
}
