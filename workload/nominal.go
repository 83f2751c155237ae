package workload

import "math"

// Nominal returns the mean length the distribution d asks for, in tokens: a fixed one's
// (clamped and rounded as drawn), the mean of a normal or lognormal one without min or max,
// the mean of the integers a uniform one draws from ((⌈min⌉ + ⌊max⌋) ÷ 2); 0 when clamps
// make it unknown or d is not valid.
func (d Dist) Nominal() float64 {
	switch d.Dist {
	case DistFixed: // as sampler.draw
		x := d.Mean
		if d.Min > 0 {
			x = math.Max(x, d.Min)
		}
		if d.Max > 0 {
			x = math.Min(x, d.Max)
		}
		return math.Max(math.Round(x), 1)
	case DistUniform:
		lo, hi := math.Ceil(d.Min), math.Floor(d.Max)
		if !(lo >= 1) || hi < lo {
			return 0
		}
		return (lo + hi) / 2
	case distNormal, distLognormal:
		if d.Min > 0 || d.Max > 0 || !(d.Mean >= 1) {
			return 0
		}
		return d.Mean
	}
	return 0
}

// NominalLengths returns the mean prompt and output lengths, in tokens, the workload w asks
// for (Dist.Nominal): the output's is max_tokens, exact with FixedOutput and a cap
// otherwise. A dataset's prompts (and its outputs, unless fixed_output draws them from
// output_tokens) have lengths of their own: 0. With synthetic sessions the prompt is a
// growing history (0) and the output is sessions.output_tokens (else output_tokens).
func (w WorkloadConfig) NominalLengths() (input, output float64) {
	if ss := w.Sessions; ss != nil && w.Dataset == "" {
		if ss.OutputTokens != (Dist{}) {
			return 0, ss.OutputTokens.Nominal()
		}
		return 0, w.OutputTokens.Nominal()
	}
	if w.Dataset == "" {
		return w.InputTokens.Nominal(), w.OutputTokens.Nominal()
	}
	if w.FixedOutput && w.OutputTokens != (Dist{}) {
		return 0, w.OutputTokens.Nominal()
	}
	return 0, 0
}
