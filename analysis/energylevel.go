package analysis

import (
	"math"

	"github.com/kneecap/kneecap/record"
)

// A level's GPU figures (DESIGN §4.16): what Summarize reads from its record.GPUStats, and the
// energy above idle that Analyze adds from the run's idle reading.

// minGPUSamples is the least number of readings in a window for its GPU figures: fewer give
// a power mean of one or two instants and no energy integral worth the name.
const minGPUSamples = 3

// levelGPU returns lv's GPU figures from g, its window's GPU telemetry (nil without one): with
// fewer than minGPUSamples readings every figure is null; otherwise the power (total and per
// GPU: the total ÷ GPUs), utilisation and SM activity, and where g has the window's energy E,
// J per token E ÷ (tps × window), J per request E ÷ (QPS × window) and tokens per joule, the
// inverse of the first. tps is the run's yardstick's (output tokens/s, or an embeddings run's
// input tokens/s: its JPerOutputToken is then J per input token). lv's window, TPS and QPS
// must be filled. The energy above idle needs the run's idle reading (aboveIdle).
func levelGPU(g *record.GPUStats, lv *Level, tps func(*Level) Float) *LevelGPU {
	if g == nil {
		return nil
	}
	out := NoLevelGPU()
	out.Source, out.GPUs, out.Samples = g.Source, len(g.GPUs), g.Samples
	if g.Samples < minGPUSamples {
		return out
	}
	out.PowerW = PowerStats{Mean: Float(g.PowerMeanW), P95: Float(g.PowerP95W)}
	if n := float64(out.GPUs); n > 0 {
		out.PowerPerGPUW = PowerStats{Mean: Float(g.PowerMeanW / n), P95: Float(g.PowerP95W / n)}
	}
	out.UtilPct, out.SMActive = floatOf(g.UtilPct), floatOf(g.SMActive)
	if g.EnergyJ == nil || !finite(*g.EnergyJ) || *g.EnergyJ < 0 {
		return out
	}
	e := *g.EnergyJ
	out.EnergyJ, out.EnergySource = Float(e), g.EnergySource
	window := float64(lv.WindowS)
	if tokens := float64(tps(lv)) * window; finite(tokens) && tokens > 0 {
		out.JPerOutputToken = Float(e / tokens)
		if e > 0 {
			out.OutputTokensPerJoule = Float(tokens / e)
		}
	}
	if reqs := float64(lv.QPS) * window; finite(reqs) && reqs > 0 {
		out.JPerRequest = Float(e / reqs)
	}
	return out
}

// NoLevelGPU returns a level's GPU figures with every figure null (a level-summary CSV's row
// fills those its cells give).
func NoLevelGPU() *LevelGPU {
	n := NaN()
	return &LevelGPU{PowerW: PowerStats{n, n}, PowerPerGPUW: PowerStats{n, n}, EnergyJ: n,
		JPerOutputToken: n, JPerOutputTokenAboveIdle: n, JPerRequest: n, OutputTokensPerJoule: n,
		UtilPct: n, SMActive: n}
}

// floatOf returns *v, or null when v is nil.
func floatOf(v *float64) Float {
	if v == nil {
		return NaN()
	}
	return Float(*v)
}

// idlePower returns the total power of the run's idle reading (Meta.GPUIdle) in W, or NaN
// without one of at least minGPUSamples readings.
func idlePower(idle *record.GPUStats) float64 {
	if idle == nil || idle.Samples < minGPUSamples || !finite(idle.PowerMeanW) {
		return math.NaN()
	}
	return idle.PowerMeanW
}

// aboveIdle sets the J per token above idle of lv's GPU figures, (E − P_idle × window) ÷
// (tps × window), tps the run's yardstick's (levelGPU), with idleW the idle reading's total
// power (Meta.GPUIdle); without
// an idle reading it leaves the figure as it is (null, or a level-summary CSV's cell). It
// copies lv.GPU first: the levels Analyze was given are not modified.
func aboveIdle(lv *Level, idleW float64, tps func(*Level) Float) {
	if lv.GPU == nil {
		return
	}
	g := *lv.GPU
	lv.GPU = &g
	if !finite(idleW) {
		return
	}
	window := float64(lv.WindowS)
	tokens := float64(tps(lv)) * window
	if !g.EnergyJ.OK() || !finite(tokens) || !(tokens > 0) {
		g.JPerOutputTokenAboveIdle = NaN()
		return
	}
	g.JPerOutputTokenAboveIdle = Float((float64(g.EnergyJ) - idleW*window) / tokens)
}
