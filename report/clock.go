package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/selfcheck"
)

// clockNote says which clock the latencies of res are on (DESIGN §3.3), over every level's
// latency population: "Latencies on the kernel's clock: receive timestamps of the chunks, sends
// by transmit timestamps (100% of requests)"; "" when no level has records (an imported
// table).
func clockNote(res *analysis.Result) string {
	var n, kernel, tx int
	for i := range res.Levels {
		c := res.Levels[i].Clock
		if c == nil {
			continue
		}
		k := int(math.Round(c.KernelShare * float64(c.Requests)))
		n, kernel, tx = n+c.Requests, kernel+k, tx+int(math.Round(c.SendTXShare*float64(k)))
	}
	switch {
	case n == 0:
		return ""
	case kernel == 0:
		return "Latencies on the client's clock: the connections had no kernel timestamps (not Linux, or refused)"
	}
	send := fmt.Sprintf("sends by transmit timestamps (%s of requests)", share(tx, kernel))
	switch {
	case tx == 0:
		send = "sends when the write of the request returned (no transmit timestamps)"
	case tx < kernel:
		send += ", the others when the write of the request returned"
	}
	if kernel == n {
		return "Latencies on the kernel's clock: receive timestamps of the chunks, " + send
	}
	return fmt.Sprintf("Latencies on the kernel's clock for %s of requests (receive timestamps of the chunks, %s), on the client's for the others",
		share(kernel, n), send)
}

// share formats a of b as a whole percentage, 100% only when a = b and 0% only when a = 0.
func share(a, b int) string {
	p := math.Round(100 * float64(a) / float64(b))
	if a < b {
		p = min(p, 99)
	}
	if a > 0 {
		p = max(p, 1)
	}
	return fmt.Sprintf("%.0f%%", p)
}

// clientEffectNote quotes the client-effect estimates of res (DESIGN §3.3): the largest
// deciding estimate of each kind over the levels (ties to the first level by concurrency),
// where it was measured and the tolerance — "Client effect, the largest at any level: on
// TTFT p95 0.3% (at 16), on offered load 0.8% (at 1); a level is client-bound above 1.0%" —
// or "" when no level has one.
func clientEffectNote(res *analysis.Result) string {
	type worst struct {
		name  string
		v     float64
		where string
	}
	best := make(map[string]worst)
	tol := 0.0
	for _, l := range sortedLevels(res) {
		if l.Superseded {
			continue
		}
		tol = math.Max(tol, l.ClientTolerance)
		eff := decidingEffects(l.ClientEffect)
		for kind, name := range selfcheck.LargestEffects(eff) {
			if w, ok := best[kind]; !ok || eff[name] > w.v {
				best[kind] = worst{name, eff[name], levelKey(&l)}
			}
		}
	}
	var parts []string
	for _, kind := range selfcheck.EffectKinds {
		if w, ok := best[kind]; ok {
			parts = append(parts, fmt.Sprintf("on %s %s (at %s)", selfcheck.EffectLabel(w.name), selfcheck.FormatShare(w.v), w.where))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("Client effect, the largest at any level: %s; a level is client-bound above %.1f%%", strings.Join(parts, ", "), 100*tol)
}

// decidingEffects returns the estimates of eff that decide the verdict (selfcheck.EffectDecides).
func decidingEffects(eff map[string]float64) map[string]float64 {
	out := make(map[string]float64, len(eff))
	for k, v := range eff {
		if selfcheck.EffectDecides(k) {
			out[k] = v
		}
	}
	return out
}
