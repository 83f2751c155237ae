package analysis

import (
	"math"
)

// The warnings of energy per token (DESIGN §4.16).

// The kinds of the energy warnings, numbered apart from warnings.go's and the arrival rate's.
const (
	warnGPUEnergyUnmeasured warnKind = 2000 + iota
	warnEnergyFewLevels
	warnEnergySLOAbove
)

// gpuEnergyUnmeasured: a level with GPU telemetry whose energy is null: too few readings in
// its window (fewer than minGPUSamples), or none that bracket it.
func gpuEnergyUnmeasured(lv *Level) warning {
	x := levelSubject(lv)
	readings := "readings"
	if lv.GPU.Samples == 1 {
		readings = "reading"
	}
	return newWarning(warnGPUEnergyUnmeasured, x,
		"level %s: GPU energy not measured: %d distinct %s in the window; next: a shorter gpu_metrics.interval or a longer window (the DCGM exporter refreshes every 30 s unless started with -c 1000)",
		x, lv.GPU.Samples, readings)
}

// energyFewLevels: n valid levels with energy around the lowest J per output token, too few for
// the optimum's bootstrap interval.
func energyFewLevels(n int) warning {
	return newWarning(warnEnergyFewLevels, "",
		"energy: %d valid levels with a J per output token: no 95%% interval of the energy-optimal load; measure at least %d levels with GPU telemetry",
		n, minIntervalLevels)
}

// energySLOAbove: J per output token at the SLO point is more than sloEnergyExcess above the
// optimum's.
func energySLOAbove(ax Axis, slo, opt EnergyPoint) warning {
	pct := (float64(slo.JPerOutputToken)/float64(opt.JPerOutputToken) - 1) * 100
	return newWarning(warnEnergySLOAbove, "",
		"energy: the SLO point (%s) spends %s J per output token, %.0f%% above the energy-optimal load's %s J (%s)",
		ax.At(fconcurrency(float64(slo.X))), slo.JPerOutputToken.Format(), math.Round(pct),
		opt.JPerOutputToken.Format(), ax.At(fconcurrency(float64(opt.X))))
}
