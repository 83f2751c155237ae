package config

import (
	"github.com/kneecap/kneecap/record"
)

// embeddings checks the keys that depend on target.api embeddings (DESIGN §4.17):
// workload.batch applies to it only; a conversation (workload.sessions), a trace replay of
// generations or users who leave mid-stream (workload.cancel) cannot be embedded; and an SLO set on TTFT, TPOT or ITL cannot be met by an
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
	if wl.Cancel != nil {
		v.badAt("workload.cancel", []string{"workload.cancel", "target.api"},
			"an embeddings answer (target.api embeddings) arrives whole, not as a stream a user could leave mid-answer: remove one of the two")
	}
	if wl.Trace.Enabled() {
		v.badAt("workload.trace", []string{"workload.trace", "target.api"},
			"a trace replays generations (their output lengths with ignore_eos), not embeddings (target.api embeddings): remove one of the two")
	}
	for _, o := range v.c.SLO.StreamObjectives() {
		// A flag sets the section (--slo replaces the objectives, --slo-e2e-p95 keeps the
		// defaults beside its own): an objective there other than the default's is the flag's.
		key := "slo." + o.Name()
		if v.c.setHere(key) || v.c.setHere("slo") && o.Max != Default().SLO.Get(o.Metric, o.Percentile) {
			v.badAt(key, []string{key, "slo", "target.api"},
				"an embeddings answer (target.api embeddings) arrives whole: it has no TTFT, TPOT or ITL; set its latency instead (--slo e2e:p95:D)")
		}
	}
	// The others are the defaults', left out of the analysis (AnalysisOptions).
}

// setHere reports whether the file or a flag set key itself (a flag that sets a section, as
// --slo does, sets its key).
func (c *Config) setHere(key string) bool {
	if c.src == nil {
		return false
	}
	_, flag := c.src.origins[key]
	_, line := c.src.lines[key]
	return flag || (line && key != "slo")
}
