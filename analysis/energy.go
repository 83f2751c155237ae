package analysis

// Energy per token (DESIGN §4.16): the types of levels[].gpu and energy in analysis.json.

// LevelGPU is a level's GPU figures over its window (levels[].gpu), from its
// record.GPUStats and its output tokens in the window. A figure not measured is null.
type LevelGPU struct {
	// Source names the telemetry (record.GPUFromDCGM, record.GPUFromNvidiaSMI; "" for a
	// level read from a level-summary CSV).
	Source string `json:"source,omitempty"`
	// GPUs is the number of GPUs counted; Samples the readings in the window.
	GPUs    int `json:"gpus"`
	Samples int `json:"samples"`
	// PowerW is the GPUs' total power over the window, in W; PowerPerGPUW one GPU's (the
	// total ÷ GPUs).
	PowerW       PowerStats `json:"power_w"`
	PowerPerGPUW PowerStats `json:"power_per_gpu_w"`
	// EnergyJ is the GPUs' energy over the window, in J; EnergySource how it was measured
	// (record.EnergyFromCounter, record.EnergyFromPower).
	EnergyJ      Float  `json:"energy_j"`
	EnergySource string `json:"energy_source,omitempty"`
	// JPerOutputToken is EnergyJ ÷ the output tokens of the window (output TPS × window);
	// JPerOutputTokenAboveIdle the same less the idle power over the window (Meta.GPUIdle);
	// JPerRequest EnergyJ ÷ the requests completed in the window (QPS × window);
	// OutputTokensPerJoule the inverse of JPerOutputToken (output tokens/s per W).
	JPerOutputToken          Float `json:"j_per_output_token"`
	JPerOutputTokenAboveIdle Float `json:"j_per_output_token_above_idle"`
	JPerRequest              Float `json:"j_per_request"`
	OutputTokensPerJoule     Float `json:"output_tokens_per_joule"`
	// UtilPct is the mean GPU utilisation in percent (util); SMActive the mean SM activity, a
	// fraction (DCGM profiling metrics only).
	UtilPct  Float `json:"util"`
	SMActive Float `json:"sm_active"`
}

// PowerStats are the mean and p95 of a power, in W.
type PowerStats struct {
	Mean Float `json:"mean"`
	P95  Float `json:"p95"`
}

// Energy is the run's energy answers (energy in analysis.json).
type Energy struct {
	// Source names the telemetry (record.GPUFromDCGM, record.GPUFromNvidiaSMI) and GPUs the
	// GPUs counted; IdleW is the idle reading's total power (null without one).
	Source string `json:"source"`
	GPUs   int    `json:"gpus"`
	IdleW  Float  `json:"idle_w"`
	// Optimal is the energy-optimal load: the place on the load axis where J per output token
	// is lowest, with a bootstrap 95% interval of its x.
	Optimal EnergyPoint `json:"optimal"`
	// AtKnee, AtSLOPoint and AtMaxTPS are J per output token (and the GPUs' power) at the
	// knee (or an open loop's capacity), the SLO point and the level of max TPS, interpolated
	// between the levels around them; null where the run has no such point.
	AtKnee     EnergyPoint `json:"at_knee"`
	AtSLOPoint EnergyPoint `json:"at_slo_point"`
	AtMaxTPS   EnergyPoint `json:"at_max_tps"`
}

// EnergyPoint is J per output token at a place x on the load axis.
type EnergyPoint struct {
	X               Float `json:"x"`
	JPerOutputToken Float `json:"j_per_output_token"`
	// PowerW is the GPUs' total mean power there, in W.
	PowerW Float `json:"power_w"`
	// Interval is a bootstrap 95% interval of X (Optimal only).
	Interval *[2]Float `json:"interval,omitempty"`
}
