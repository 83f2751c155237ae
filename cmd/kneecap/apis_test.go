package main

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// apisConfig is demoConfig (the demo engine at twice the speed) at concurrency 16 (below its
// 32 slots) and 64 (past them: requests queue for a slot), without added levels, with answers
// of 64 tokens that the engine ends on its own (output_dist fixed, output_tokens 64): the
// Messages API cannot ask for ignore_eos, so the three APIs ask the engine for the same work
// only when the engine's own length is the requested one.
var apisConfig = strings.NewReplacer(
	"  prefill_tps: 100000\n", "  prefill_tps: 100000\n  output_dist: fixed\n  output_tokens: 64\n",
	"  levels: {start: 1, max: 64, factor: 2}\n", "  levels: [16, 64]\n",
	"  refine: 2\n", "  stop: {plateau: false, overload: false}\n",
).Replace(demoConfig)

// TestEventAPIsMatchChat is issue 25's acceptance of the Responses and Messages APIs at two
// levels: swept against the demo engine (apisConfig), each gives the TPOT p50 of a chat sweep
// of the same levels within ±5% at 16 (a batch of 16 decoding: TPOT ≈ the step 2 ms + 16 ×
// 125 µs) and at 64, and the TTFT p50 within ±5% at 64 (TTFT ≈ the wait for a slot, a
// request's whole answer at 32). TTFT at 16 is only logged: below the 32 slots it is one
// prefill and a step, a few milliseconds that the scheduling of three sweeps at once moves
// by as much as the limit (design §3.11 measured 0.96–1.05), so asserting it would flake on
// a loaded machine. The same engine serves all three (sim/apis.go): only the events differ. The knee of
// a whole sweep per API is checked by hand (docs/design.md §3.11 gives the numbers). The
// three sweeps run at once, each a kneecap process without -race (accuracySweep.run).
func TestEventAPIsMatchChat(t *testing.T) {
	if testing.Short() {
		t.Skip("three two-level sweeps at once, about 10 s")
	}
	if !strings.Contains(apisConfig, "levels: [16, 64]") || !strings.Contains(apisConfig, "output_dist: fixed") || strings.Contains(apisConfig, "refine") {
		t.Fatalf("demoConfig changed: apisConfig is\n%s", apisConfig)
	}
	bin := kneecapBinary(t)
	apis := []string{"chat", "responses", "messages"}
	runs := make([]accuracySweep, len(apis))
	var wg sync.WaitGroup
	for i, api := range apis {
		runs[i].config = apisConfig + "target:\n  api: " + api + "\n"
		wg.Go(func() { runs[i].run(bin, "apis-"+api) })
	}
	wg.Wait()
	levels := map[string]map[float64][2]float64{} // API → concurrency → TTFT p50, TPOT p50 (ms)
	var starvedWhy string
	for i, api := range apis {
		if runs[i].err != nil {
			t.Fatalf("target.api %s: %v\n%s", api, runs[i].err, runs[i].stderr)
		}
		m := readJSON(t, filepath.Join(runs[i].dir, "analysis.json"))
		// The Messages API cannot force the lengths: its analysis warns (config.UnforcedLengths).
		if warned := strings.Contains(fmt.Sprint(m["warnings"]), "has no ignore_eos"); warned != (api == "messages") {
			t.Errorf("%s: warns of unforced lengths: %v (warnings %v)", api, warned, m["warnings"])
		}
		if why := starved(m); why != "" && starvedWhy == "" {
			starvedWhy = api + ": " + why
		}
		levels[api] = latencies(m)
	}
	var bad []string
	for _, api := range []string{"responses", "messages"} {
		for _, c := range []float64{16, 64} {
			got, ok := levels[api][c]
			want, okChat := levels["chat"][c]
			if !ok || !okChat {
				bad = append(bad, fmt.Sprintf("%s: no valid level %v (chat's: %v)", api, c, okChat))
				continue
			}
			for i, name := range []string{"TTFT p50", "TPOT p50"} {
				r := got[i] / want[i]
				t.Logf("%s at %v: %s %.3f ms, chat's %.3f ms (ratio %.3f)", api, c, name, got[i], want[i], r)
				if i == 0 && c == 16 {
					continue // logged only: see the doc comment
				}
				if math.IsNaN(r) || math.Abs(r-1) > 0.05 {
					bad = append(bad, fmt.Sprintf("%s at %v: %s %.3f ms, chat's %.3f ms: ratio %.3f outside 1 ± 0.05", api, c, name, got[i], want[i], r))
				}
			}
		}
	}
	if len(bad) > 0 && starvedWhy != "" {
		t.Skipf("inconclusive, %s: %v", starvedWhy, bad)
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// latencies returns the TTFT p50 and TPOT p50 (ms) of each valid level of analysis.json m, by
// concurrency (the last of a level run more than once).
func latencies(m map[string]any) map[float64][2]float64 {
	out := map[float64][2]float64{}
	ls, _ := m["levels"].([]any)
	for _, l := range ls {
		lm, _ := l.(map[string]any)
		if v, _ := lm["valid"].(bool); !v {
			continue
		}
		c, _ := lm["concurrency"].(float64)
		ttft, _ := dig(lm, "ttft_ms", "p50")
		tpot, _ := dig(lm, "tpot_ms", "p50")
		a, _ := ttft.(float64)
		b, _ := tpot.(float64)
		out[c] = [2]float64{a, b}
	}
	return out
}
