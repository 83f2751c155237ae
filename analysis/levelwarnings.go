package analysis

import (
	"fmt"
	"math"
	"slices"
	"strings"
)

// The warnings about the levels themselves: dropped, excluded or imprecise levels, too few
// of them, and the lengths and usage the server reported for them.

// levelDropped: a level with no place on the axis ax (concurrency, offered rate) or no usable
// output TPS (placed). A null TPS is "not measured": the warning says so rather than print NaN.
func levelDropped(ax Axis, lv *Level) warning {
	if ax.IsRate() {
		return newWarning(warnLevelDropped, frps(float64(lv.OfferedRPS)), "level %s: dropped: the offered rate must be > 0 and output TPS finite and ≥ 0 (output TPS %s)", levelSubject(lv), lv.OutputTPS.Format())
	}
	tps := float64(lv.OutputTPS)
	got := fmt.Sprintf("%g", tps)
	switch {
	case math.IsNaN(tps):
		got = "null"
	case math.IsInf(tps, 0):
		got = "infinite"
	}
	return newWarning(warnLevelDropped, fmt.Sprint(lv.Concurrency),
		"level %s: dropped: concurrency must be > 0 and output TPS finite and ≥ 0 (output TPS %s)", levelSubject(lv), got)
}

// levelSubject names lv by its place on its axis, as the warnings about a level do:
// "concurrency 8", "offered 2.50 requests/s" (frps, the warnings' format of a rate; the stop
// reasons name a level by levelName).
func levelSubject(lv *Level) string {
	if lv.IsRate() {
		return "offered " + frps(float64(lv.OfferedRPS)) + " requests/s"
	}
	return fmt.Sprintf("concurrency %d", lv.Concurrency)
}

// levelExcluded: an invalid level, with its notes (exclusionWhy), named by its place on the
// axis ax.
func levelExcluded(ax Axis, lv *Level) warning {
	why := "invalid"
	if len(lv.Notes) > 0 {
		why = exclusionWhy(lv.Notes)
	}
	if ax.IsRate() {
		return newWarning(warnLevelExcluded, frps(float64(lv.OfferedRPS)), "level %s excluded from the analysis: %s", levelSubject(lv), why)
	}
	return newWarning(warnLevelExcluded, fmt.Sprint(lv.Concurrency), "level %s excluded from fits: %s", levelSubject(lv), why)
}

// exclusionWhy joins an excluded level's notes with "; ", each reason once: the sweep's note
// on a verdict ("sweep: not steady after 5s: 95% CI half-width …") stands for the analysis's
// note of the same reason ("invalid: not steady: the steady-state test failed …; CI
// half-width …", "imprecise (kept): …"; statesReason), while a note of the same label but another
// cause stays ("invalid: client-bound: client effect on TTFT p50 …" beside the sweep's
// "client-bound: client effect on ITL p50 …"); an invalid note whose detail another note already
// gives ("not steady: the server did not answer" after "ended after 3s of measurement: the
// server did not answer") keeps its reason only; and a retry's note names the reason the run
// it repeats was excluded for without its detail when the level's own note states it. The
// notes themselves (levels[].notes) are unchanged.
func exclusionWhy(notes []string) string {
	var sweepNotes, out []string
	for _, n := range notes {
		if t, ok := strings.CutPrefix(n, "sweep: "); ok {
			sweepNotes = append(sweepNotes, t)
		}
	}
	stated := func(label, except string) bool {
		if label == "" {
			return false
		}
		for _, sn := range sweepNotes {
			if sn != except && strings.HasPrefix(sn, label) {
				return true
			}
		}
		return false
	}
	for _, n := range notes {
		if t, ok := strings.CutPrefix(n, "sweep: "); ok {
			if head, why, ok := strings.Cut(t, " was excluded, "); ok && strings.HasPrefix(t, "run again with ") {
				if label, _ := reasonLabel(why); stated(label, t) {
					n = "sweep: " + head + " was excluded, " + label
				}
			}
			out = append(out, n)
			continue
		}
		r, invalid := strings.CutPrefix(n, "invalid: ")
		label, detail := reasonLabel(r)
		if statesReason(sweepNotes, label, detail) {
			continue // the sweep's note states this reason with its figures
		}
		if !invalid {
			out = append(out, n)
			continue
		}
		for _, sn := range sweepNotes {
			if detail != "" && strings.Contains(sn, detail) {
				r = label // the other note gives the detail
			}
		}
		out = append(out, "invalid: "+r)
	}
	return strings.Join(out, "; ")
}

// statesReason reports whether one of the sweep's notes (without "sweep: ") states the reason
// label with its first detail clause detail: a note of the same label and detail ("" matches
// any), or the sweep's verdict on it in its own words ("not steady after 12s: …" for "not
// steady"). A note of the same label and another detail ("client-bound: client effect on ITL
// p50 …" for "client-bound: client effect on TTFT p50 …") states another cause.
func statesReason(sweepNotes []string, label, detail string) bool {
	if label == "" {
		return false
	}
	for _, sn := range sweepNotes {
		sl, sd := reasonLabel(sn)
		switch {
		case sl == label && (detail == "" || sd == detail):
			return true
		case sl != label && strings.HasPrefix(sn, label):
			return true
		}
	}
	return false
}

// reasonLabel splits an invalid note's reason into its label, the words before the first
// colon or parenthesis ("not steady"), and the first clause of the detail after a colon ("the
// server did not answer"); a reason without either is all label.
func reasonLabel(r string) (label, detail string) {
	if i := strings.Index(r, " ("); i > 0 && !strings.Contains(r[:i], ": ") {
		return r[:i], ""
	}
	label, detail, ok := strings.Cut(r, ": ")
	if !ok {
		return r, ""
	}
	detail, _, _ = strings.Cut(detail, ";")
	return label, strings.TrimSpace(detail)
}

// levelImprecise: a level kept although not steady by max_duration, with no material trend
// (Level.Imprecise): what it fell short of — its CI target, or min_requests — and its TPS with
// its 95% half-width.
func levelImprecise(lv *Level) warning {
	short := lv.impreciseWhy
	if short == "" {
		short = "short of its CI target or min_requests"
	}
	what, tps, ci := "output", lv.OutputTPS, lv.OutputTPSCI95
	if lv.Whole() {
		what, tps, ci = "input", lv.InputTPS, lv.InputTPSCI95
	}
	return newWarning(warnLevelImprecise, fmt.Sprint(lv.Concurrency),
		"level concurrency %d kept though imprecise (%s), with no material trend by max_duration: %s TPS %s ± %s tokens/s (95%%). Next: a longer sweep.max_duration (--max-duration) measures it closer",
		lv.Concurrency, short, what, tps.Format(), ci.Format())
}

// noValidLevels: every level was excluded; next says what would measure them
// (nextAfterExclusions).
func noValidLevels(next string) warning {
	return newWarning(warnNoValidLevels, "", "no valid levels: nothing to analyze. %s", next)
}

// tooFewLevels: n valid levels, fewer than the fits need; next says what would measure the
// excluded ones (nextAfterExclusions, "" when none was excluded).
func tooFewLevels(n int, next string) warning {
	if next == "" {
		next = fmt.Sprintf("Next: sweep more levels (at least %d, e.g. --levels 1,2,4,8,16,32)", minFitLevels)
	}
	return newWarning(warnTooFewLevels, "", "too few valid levels (%d < %d): no throughput fits, no knee and no TTFT hinge fit. %s", n, minFitLevels, next)
}

// exclusionSteps maps a reason a level is excluded (a prefix of its "invalid: " note) to the
// step that would measure it, in the order the steps are given; a client-bound level's step is
// exclusionStep's.
var exclusionSteps = []struct{ reason, step string }{
	{"client-bound", ""},
	{"not steady", "rerun with a longer --max-duration (and --retry-excluded), so that the levels settle"},
	{"error rate", "lower the concurrency, or see error_classes for what the server refused"},
	{"achieved concurrency", "the client kept fewer requests in flight than asked: see the levels' notes"},
	{"Little's-law", "requests straddled the window's edges: rerun with a longer --duration"},
	{"interrupted", "resume the run (kneecap sweep --resume DIR)"},
	{"no successful request", "no request succeeded: check the server (error_classes)"},
}

// turnaroundStep is the step for a level client-bound by its offered load alone: the client's
// own time between a stream's end and the next send is a share of so short a request cycle
// that no machine of its own removes it.
const turnaroundStep = "kneecap's own turnaround between a stream's end and the next send (a fraction of a millisecond a request) is that share of these short requests' cycle: longer requests (more output tokens) shrink it, or a larger sweep.client_tolerance accepts it"

// clientStep is the step for a client-bound level, from its note's reason: the turnaround step
// when only the offered load and the throughput estimates exceeded the tolerance, else a
// machine of its own.
func clientStep(reason string) string {
	_, list, ok := strings.Cut(reason, "client effect on ")
	list, _, _ = strings.Cut(list, " > tolerance")
	if ok {
		loadOnly := true
		for _, item := range strings.Split(list, ", ") {
			loadOnly = loadOnly && (strings.HasPrefix(item, "offered load") || strings.HasPrefix(item, "throughput"))
		}
		if loadOnly {
			return turnaroundStep
		}
	}
	return "the load generator could not keep up: run kneecap on a machine of its own, or split the load over processes (--shard I/N, docs/sharding.md)"
}

// nextAfterExclusions is the next step when levels were excluded: for each reason that
// excluded some level (not a superseded one), what would measure it; when no known reason
// did, the levels' notes.
func nextAfterExclusions(levels []Level) string {
	var steps []string
	add := func(step string) {
		if !slices.Contains(steps, step) {
			steps = append(steps, step)
		}
	}
	for _, e := range exclusionSteps {
		for i := range levels {
			lv := &levels[i]
			if lv.Valid || lv.Superseded {
				continue
			}
			for _, n := range lv.Notes {
				if r, ok := strings.CutPrefix(n, "invalid: "+e.reason); ok {
					if e.step == "" {
						add(clientStep(r))
					} else {
						add(e.step)
					}
				}
			}
		}
	}
	if len(steps) == 0 {
		for i := range levels {
			if !levels[i].Valid && !levels[i].Superseded {
				return "Next: see why each level was excluded (its notes)"
			}
		}
		return ""
	}
	return "Next: " + strings.Join(steps, "; ")
}

// zeroThroughput: valid levels with no output left out of the fits (zero lists their
// concurrencies); remain is the number of levels the fits keep.
func zeroThroughput(zero []string, remain int) warning {
	w := newWarning(warnZeroThroughput, "", "throughput fits: the valid level(s) at concurrency %s with 0 output tokens/s are left out of the %s, %s and %s fits and the knee (the models need positive throughput)",
		strings.Join(zero, ", "), MethodUSL.Label(), MethodBatch.Label(), MethodHinge.Label())
	if remain < minFitLevels {
		w.text += fmt.Sprintf("; %d level(s) remain, too few (< %d): no throughput fits and no knee", remain, minFitLevels)
	}
	return w
}

// promptLengthOff: the server counted the prompts of levels more than maxLengthOff from the
// length requested.
func promptLengthOff(levels []*Level) warning {
	return newWarning(warnPromptLengthOff, "", "prompt length: the server counted prompts more than %.0f%% off the length requested at %s: its tokenizer or chat template counts them otherwise, so those levels measured another workload than the one asked for",
		maxLengthOff*100, lengthsAt(levels, func(l *Level) TokenLengths { return l.InputTokens }))
}

// outputLengthIgnored: with fixed_output, the outputs of levels were more than maxLengthOff
// from the max_tokens requested with ignore_eos and min_tokens.
func outputLengthIgnored(levels []*Level) warning {
	return newWarning(warnOutputLengthIgnored, "", "output length: fixed_output asked for exactly max_tokens (with ignore_eos and min_tokens), but the outputs were more than %.0f%% off it at %s: the server ignores those parameters (an OpenAI-style API, Ollama), so outputs end where the model stops and those levels measured another workload than the one asked for",
		maxLengthOff*100, lengthsAt(levels, func(l *Level) TokenLengths { return l.OutputTokens }))
}

// lengthsAt lists each level's concurrency and its length distribution against the request:
// "concurrency 1 (mean 247, p50 247, p95 251 vs 64 requested), 2 (…)" (levelsAt).
func lengthsAt(levels []*Level, of func(*Level) TokenLengths) string {
	return levelsAt(levels, func(l *Level) string {
		t := of(l)
		return fmt.Sprintf("mean %s, p50 %s, p95 %s vs %s requested", FormatTokens(t.Mean), FormatTokens(t.P50), FormatTokens(t.P95), FormatTokens(t.Requested))
	})
}

// usageDisbelieved: at each of levels, the usage the server reported was not believed for
// some of the requests sent in the window (DESIGN §7); one warning names them all.
func usageDisbelieved(levels []*Level) warning {
	at := levelsAt(levels, func(l *Level) string { return fmt.Sprintf("%d of %d requests", l.UsageDisbelieved, l.Requests) })
	return newWarning(warnUsageDisbelieved, "", "usage: the usage the server reported was not believed at %s (a count no server could send for the stream that arrived): an output count not believed is replaced by the content chunks, and the level's TPS counts them; a prompt count not believed is left out of the counted input lengths (input TPS counts the requested length); the levels' notes and tokens_note in records.jsonl say why",
		at)
}
