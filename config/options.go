package config

import "github.com/kneecap/kneecap/analysis"

// AnalysisOptions returns the analysis options of a run with this configuration (the one
// place a Config becomes analysis.Options): its SLO (the article's defaults, TTFT p95 ≤ 2 s
// and TPOT p95 ≤ 50 ms, when the config sets none; the objectives it sets replace them all), knee gain, max error rate, capacity
// plan and the lengths its workload requests, with analysis.DefaultOptions' bootstrap and
// seed.
func (c Config) AnalysisOptions() analysis.Options {
	o := analysis.DefaultOptions()
	if c.Analysis.KneeGain > 0 {
		o.KneeGain = c.Analysis.KneeGain
	}
	if c.SLO.Any() {
		o.SLO = c.SLO
	}
	if c.Sweep.Stop.MaxErrorRate > 0 {
		o.MaxErrorRate = c.Sweep.Stop.MaxErrorRate
	}
	o.Plan = c.Plan
	// The Messages API has no ignore_eos: its output lengths are not forced (UnforcedLengths).
	o.Lengths.FixedOutput = c.Workload.FixedOutput && c.UnforcedLengths() == ""
	o.Lengths.InputTokens, o.Lengths.OutputTokens = c.Workload.NominalLengths()
	o.Think = c.Workload.MeanThink()
	o.API = c.Target.API
	if !o.API.Streams() {
		// Validate refuses a TTFT, TPOT or ITL objective set for an embeddings run: these
		// are the defaults, which do not apply.
		o.SLO = o.SLO.WithoutStream()
		// An embedding has no output: the workload's output lengths were not sent.
		o.Lengths.FixedOutput, o.Lengths.OutputTokens = false, 0
	}
	return o
}
