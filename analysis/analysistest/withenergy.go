package analysistest

import (
	"math"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// The energy fixtures follow the simulator's power model (DESIGN §6, issue 24): one GPU that
// draws P = idle + (max − idle) × running ÷ slots, idle 120 W and max 700 W over the 32 slots,
// running min(c, 32) at concurrency c (the achieved concurrency on an arrival-rate level). J per
// output token is P ÷ output TPS: on the Saturating curve (120 + 18.125 n)(4 ms + 0.25 ms n) ÷ n
// = 0.48 ÷ n + 0.1025 + 0.00453 n, lowest at n = √(0.48 ÷ 0.00453) = 10.3 with 0.196 J/token,
// and 700 ÷ 2667 = 0.2625 J/token from 32 on.

// Power model of the fixtures, in W.
const (
	idleW = 120
	maxW  = 700
)

// powerAt is the model's power in W with running requests running.
func powerAt(running float64) float64 { return idleW + (maxW-idleW)*math.Min(running, slots)/slots }

// gpuLevel sets l's GPU figures from the power model with running requests running.
func gpuLevel(l *analysis.Level, running float64) {
	p, tps := powerAt(running), float64(l.OutputTPS)
	f := func(v float64) analysis.Float { return analysis.Float(v) }
	pw := analysis.PowerStats{Mean: f(p), P95: f(p * 1.02)}
	l.GPU = &analysis.LevelGPU{GPUs: 1, Samples: int(float64(l.WindowS)), PowerW: pw, PowerPerGPUW: pw,
		EnergyJ: f(p * float64(l.WindowS)), EnergySource: record.EnergyFromCounter,
		JPerOutputToken: f(p / tps), JPerOutputTokenAboveIdle: f((p - idleW) / tps), JPerRequest: f(p / float64(l.QPS)),
		OutputTokensPerJoule: f(tps / p), UtilPct: 100, SMActive: f(math.Min(running, slots) / slots)}
}

// withIdle sets r's idle reading (Meta.GPUIdle) to the model's idle power.
func withIdle(r *analysis.Result) {
	r.Meta.GPUIdle = &record.GPUStats{Source: record.GPUFromDCGM, From: "http://127.0.0.1:9400/metrics", Samples: 5,
		GPUs:       []record.GPUReading{{GPU: record.GPU{Index: "0", Model: "NVIDIA H100 80GB HBM3"}, PowerMeanW: idleW, PowerP95W: idleW}},
		PowerMeanW: idleW, PowerP95W: idleW}
}

// point is an energy point at x with J per output token j at power p.
func point(x, j, p float64) analysis.EnergyPoint {
	return analysis.EnergyPoint{X: analysis.Float(x), JPerOutputToken: analysis.Float(j), PowerW: analysis.Float(p)}
}

// optimum is the energy optimum at x with j J per output token, running requests running, and
// the interval lo–hi of x.
func optimum(x, j, running, lo, hi float64) analysis.EnergyPoint {
	p := point(x, j, powerAt(running))
	p.Interval = &[2]analysis.Float{analysis.Float(lo), analysis.Float(hi)}
	return p
}

// energize gives r's levels their GPU figures with running(l) requests running, the idle
// reading, and the energy answers e of one GPU read from DCGM.
func energize(r *analysis.Result, running func(l *analysis.Level) float64, e analysis.Energy) *analysis.Result {
	for i := range r.Levels {
		gpuLevel(&r.Levels[i], running(&r.Levels[i]))
	}
	withIdle(r)
	e.Source, e.GPUs, e.IdleW = record.GPUFromDCGM, 1, idleW
	r.Energy = &e
	return r
}

// WithEnergy is Saturating with GPU telemetry (the power model above): every level's GPU
// figures, the energy optimum at concurrency 10.3 (0.196 J/token; a bootstrap interval of
// 8.9–12.1 assumed), 0.2625 J/token at the knee (32.6), the SLO point (45.3) and max TPS (32),
// and the plan's energy: 700 W a replica, 23 × 0.7 = 16.1 kW, 0.2625 × 10⁶ ÷ 3.6 × 10⁶ =
// 0.0729 kWh per 1M output tokens, $0.00875 at $0.12 per kWh.
func WithEnergy() *analysis.Result {
	r := energize(Saturating(), func(l *analysis.Level) float64 { return float64(l.Concurrency) }, analysis.Energy{
		Optimal: optimum(10.3, 0.196, 10.3, 8.9, 12.1),
		AtKnee:  point(32.6, 0.2625, maxW), AtSLOPoint: point(45.3, 0.2625, maxW), AtMaxTPS: point(32, 0.2625, maxW)})
	c := r.Capacity
	c.PowerPerReplicaW, c.FleetPowerKW, c.KWhPerMOutputTokens, c.EnergyCostPerMTokens = maxW, 16.1, 0.0729, 0.00875
	return r
}

// RateWithEnergy is Rate with GPU telemetry: each level's power from its achieved concurrency
// (the requests running), lowest J per output token at 12 requests/s (10.8 running: 316 W ÷
// 1542 tok/s = 0.205 J/token; interval 10–14 assumed), at the capacity 20.84 and the SLO point
// 20.6 the 20 requests/s level's 0.249 J/token (611 W), at max TPS (26) 700 W ÷ 2667 = 0.2625.
func RateWithEnergy() *analysis.Result {
	return energize(Rate(), func(l *analysis.Level) float64 { return float64(l.AchievedConcurrency) }, analysis.Energy{
		Optimal: optimum(12, 0.205, 10.8, 10, 14),
		AtKnee:  point(20.84, 0.249, 611), AtSLOPoint: point(20.6, 0.249, 611), AtMaxTPS: point(26, 0.2625, maxW)})
}
