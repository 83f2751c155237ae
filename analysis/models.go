package analysis

import (
	"fmt"
	"slices"

	"github.com/kneecap/kneecap/record"
)

// Model mixes (workload.models, DESIGN §3.6; by_model in §4.12, the warning in §4.11): a level
// whose requests named models is also summarised per model, each model's records summarised
// by the level's own code (level) over the same window and population, so a model's numbers
// mean what the level's mean.

// ModelStats summarises one model's requests of a level (Level.ByModel).
type ModelStats struct {
	// Model is the model the requests named (record.Record.Model).
	Model string `json:"model"`
	// Requests counts the model's requests of the level's latency population (sent in the
	// window; on an arrival-rate level, the window's arrivals); Errors the failed ones.
	Requests int `json:"requests"`
	Errors   int `json:"errors"`
	// Share is Requests ÷ the level's Requests.
	Share Float `json:"share"`
	// TTFT, TPOT and E2E percentiles (type 7) of the model's successful requests, in
	// milliseconds.
	TTFTP50 Float `json:"ttft_p50_ms"`
	TTFTP95 Float `json:"ttft_p95_ms"`
	TPOTP50 Float `json:"tpot_p50_ms"`
	TPOTP95 Float `json:"tpot_p95_ms"`
	E2EP95  Float `json:"e2e_p95_ms"`
	// OutputTPS is the model's output tokens whose chunk arrived inside the window ÷ its
	// length: the model's part of the level's OutputTPS.
	OutputTPS Float `json:"output_tps"`
	// InputTPS and E2EP50 are an embeddings run's (Whole) yardstick: the model's part of the
	// level's InputTPS, and its latency p50 beside E2EP95; zero, and absent, on a stream.
	InputTPS Float `json:"input_tps,omitempty"`
	E2EP50   Float `json:"e2e_p50_ms,omitempty"`
	// whole marks an embeddings model's summary: it has no TTFT, TPOT or output TPS, and
	// their keys are absent from analysis.json (MarshalJSON).
	whole bool
}

// Whole reports an embeddings model's summary (the level's Whole): measured by InputTPS and
// E2EP50/E2EP95, without TTFT, TPOT or output TPS.
func (m ModelStats) Whole() bool { return m.whole }

// MarshalJSON encodes m; an embeddings model's summary (Whole) without the keys of what it
// does not have (TTFT, TPOT, output TPS).
func (m ModelStats) MarshalJSON() ([]byte, error) {
	type plain ModelStats // without this method
	return marshalWhole(plain(m), m.whole, "ttft_p50_ms", "ttft_p95_ms", "tpot_p50_ms", "tpot_p95_ms", "output_tps")
}

// latencyP95 is the p95 of the latency m's run's yardstick watches: TTFT on a stream, the
// whole answer's (E2E) for embeddings.
func (m ModelStats) latencyP95() Float {
	if m.whole {
		return m.E2EP95
	}
	return m.TTFTP95
}

// minModelRequests is the fewest successful requests of each of two models whose latency
// p95 (TTFT, or an embeddings run's E2E) the mix warning compares: below 20 a p95 is the
// largest value or next to it.
const minModelRequests = 20

// mixRatio is the ratio of two models' latency p95 at one level above which the mix warns.
const mixRatio = 2

// byModel summarises records per model (Record.Model) with the level's own summary (level),
// sorted by model name; nil when no record names a model (no mix: the key is absent). total
// is the level's Requests, the shares' denominator.
func (s *scratch) byModel(run *record.LevelRun, records []record.Record, opts Options, total int) []ModelStats {
	seen := map[string]bool{}
	var names []string
	for i := range records {
		if m := records[i].Model; m != "" && !seen[m] {
			seen[m] = true
			names = append(names, m)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	out := make([]ModelStats, 0, len(names))
	var subset []record.Record // one model's records at a time: the copy is at most the largest model's
	for _, m := range names {
		subset = subset[:0]
		for i := range records {
			if records[i].Model == m {
				subset = append(subset, records[i])
			}
		}
		lv := s.level(run, subset, opts)
		st := ModelStats{Model: m, Requests: lv.Requests, Errors: lv.Errors, Share: NaN(),
			TTFTP50: lv.TTFT.P50, TTFTP95: lv.TTFT.P95, TPOTP50: lv.TPOT.P50, TPOTP95: lv.TPOT.P95,
			E2EP95: lv.E2E.P95, OutputTPS: lv.OutputTPS}
		if lv.Whole() {
			st.InputTPS, st.E2EP50, st.whole = lv.InputTPS, lv.E2E.P50, true
		}
		if total > 0 {
			st.Share = Float(float64(lv.Requests) / float64(total))
		}
		out = append(out, st)
	}
	return out
}

// slowestPair returns the models of lv's mix with the largest and the smallest latency p95
// (latencyP95: TTFT, or an embeddings run's E2E) among those with minModelRequests
// successful requests; ok is false when fewer than two have them.
func (lv *Level) slowestPair() (slow, fast ModelStats, ok bool) {
	n := 0
	for _, m := range lv.ByModel {
		if m.Requests-m.Errors < minModelRequests || !m.latencyP95().OK() {
			continue
		}
		if n == 0 || m.latencyP95() > slow.latencyP95() {
			slow = m
		}
		if n == 0 || m.latencyP95() < fast.latencyP95() {
			fast = m
		}
		n++
	}
	return slow, fast, n >= 2
}

// models warns, for each pair of models, of the levels (not superseded) where the slower's
// latency p95 (the yardstick's: TTFT, or an embeddings run's) is more than mixRatio × the
// faster's (modelSlower).
func (a *analyzer) models() {
	type pair struct{ slow, fast string }
	at := map[pair][]*Level{}
	var order []pair
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		if lv.Superseded {
			continue
		}
		slow, fast, ok := lv.slowestPair()
		if !ok || !(float64(slow.latencyP95()) > mixRatio*float64(fast.latencyP95())) {
			continue
		}
		p := pair{slow.Model, fast.Model}
		if _, seen := at[p]; !seen {
			order = append(order, p)
		}
		at[p] = append(at[p], lv)
	}
	for _, p := range order {
		a.warn(modelSlower(p.slow, p.fast, at[p], a.ys.latencyName))
	}
}

// modelSlower: model slow's latency p95 (latency names it: "TTFT", or "latency") is more
// than mixRatio × model fast's at levels, each named with both values.
func modelSlower(slow, fast string, levels []*Level, latency string) warning {
	values := func(lv *Level) string {
		var s, f ModelStats
		for _, m := range lv.ByModel {
			switch m.Model {
			case slow:
				s = m
			case fast:
				f = m
			}
		}
		return fmt.Sprintf("%s ms vs %s ms", s.latencyP95().Format(), f.latencyP95().Format())
	}
	return newWarning(warnModelSlower, slow+"\x00"+fast,
		"model mix: model %q's %s p95 is more than %d× model %q's at %s: its requests cost the server more (a LoRA adapter's added compute), and the level's percentiles pool both models. Next: size for the slower model's SLO (levels[].by_model), or serve it apart",
		clipName(slow), latency, mixRatio, clipName(fast), levelsAt(levels, values))
}

// clipName clips a model name to 64 characters for a warning's text.
func clipName(s string) string {
	if r := []rune(s); len(r) > 64 {
		return string(r[:63]) + "…"
	}
	return s
}
