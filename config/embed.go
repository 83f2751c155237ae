package config

import (
	"strings"

	"github.com/kneecap/kneecap/record"
)

// embeddings checks the keys that depend on target.api embeddings (DESIGN §4.17):
// workload.batch applies to it only; a conversation (workload.sessions) or a trace replay
// of generations cannot be embedded; and an SLO set on TTFT, TPOT or ITL cannot be met by an
// answer that has none. The lengths of output (workload.output_tokens, fixed_output) are
// not sent: an embedding has no output.
func (v *validation) embeddings() {
	wl := v.c.Workload
	if v.c.Target.API != record.APIEmbeddings {
		if wl.Batch != 0 {
			v.badAt("workload.batch", []string{"workload.batch", "target.api"},
				"is %d, but target.api is %s: inputs per request apply to target.api embeddings only", wl.Batch, v.c.Target.API)
		}
		return
	}
	if wl.Sessions != nil {
		v.badAt("workload.sessions", []string{"workload.sessions", "target.api"},
			"an embeddings request (target.api embeddings) has no conversation to continue: remove one of the two")
	}
	if wl.Trace.Enabled() {
		v.badAt("workload.trace", []string{"workload.trace", "target.api"},
			"a trace replays generations (their output lengths with ignore_eos), not embeddings (target.api embeddings): remove one of the two")
	}
	if !v.c.setUnder("slo") {
		return // the default SLO's TTFT and TPOT are left out (AnalysisOptions)
	}
	for _, o := range v.c.SLO.StreamObjectives() {
		v.badAt("slo."+o.Name(), []string{"slo." + o.Name(), "slo", "target.api"},
			"an embeddings answer (target.api embeddings) arrives whole: it has no TTFT, TPOT or ITL; set its latency instead (--slo e2e:p95:D)")
	}
}

// setUnder reports whether the file or a flag set key or a key under it.
func (c *Config) setUnder(key string) bool {
	if c.src == nil {
		return false
	}
	under := func(k string) bool { return k == key || strings.HasPrefix(k, key+".") }
	for k := range c.src.origins {
		if under(k) {
			return true
		}
	}
	for k := range c.src.lines {
		if under(k) {
			return true
		}
	}
	return false
}
