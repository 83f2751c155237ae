package record

// GPU telemetry (DESIGN §3.10): what the GPUs serving the target drew and did over a window,
// read from the DCGM exporter's Prometheus text or sampled with nvidia-smi. The load
// generator fills a level's GPUStats (LevelRun.GPU) and the run's idle reading; the analysis
// turns them into energy per token.

// Sources of GPUStats.Source.
const (
	// GPUFromDCGM: the DCGM exporter's families (DCGM_FI_DEV_POWER_USAGE,
	// DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, …) in a Prometheus text endpoint: the exporter's
	// own (:9400/metrics) or the server's metrics scrape.
	GPUFromDCGM = "dcgm"
	// GPUFromNvidiaSMI: `nvidia-smi --query-gpu=… --format=csv` run on this machine.
	GPUFromNvidiaSMI = "nvidia-smi"
)

// Sources of GPUStats.EnergySource.
const (
	// EnergyFromCounter: the increase of each GPU's energy counter over the window
	// (DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, mJ), interpolated at the window's ends from the
	// readings around them.
	EnergyFromCounter = "counter"
	// EnergyFromPower: the trapezoid integral of each GPU's power readings over the window
	// (no energy counter was read).
	EnergyFromPower = "power_integral"
)

// GPU names one GPU counted: its labels as the source gave them.
type GPU struct {
	// Index is the GPU's index on its host (DCGM's gpu label, nvidia-smi's index).
	Index string `json:"gpu"`
	// UUID, Model (modelName) and Host (Hostname) identify it; Pod and Namespace are the
	// Kubernetes pod using it, where the exporter maps them.
	UUID      string `json:"uuid,omitempty"`
	Model     string `json:"model,omitempty"`
	Host      string `json:"host,omitempty"`
	Pod       string `json:"pod,omitempty"`
	Namespace string `json:"namespace,omitempty"`
}

// GPUReading is one GPU's figures over a window.
type GPUReading struct {
	GPU
	// PowerMeanW and PowerP95W are the mean and the p95 (type 7) of its power readings in the
	// window, in W.
	PowerMeanW float64 `json:"power_mean_w"`
	PowerP95W  float64 `json:"power_p95_w"`
	// EnergyJ is the energy it drew over the window, in J (GPUStats.EnergySource says how);
	// nil when too few readings bracket the window.
	EnergyJ *float64 `json:"energy_j,omitempty"`
}

// GPUStats is what the GPUs serving the target measured over a window [W0, W1) (DESIGN
// §3.10): a level's window (LevelRun.GPU) or the idle reading before the first level. A
// figure no source gave is nil (not measured), never 0.
type GPUStats struct {
	// Source is GPUFromDCGM or GPUFromNvidiaSMI; From names where it was read (the exporter's
	// URL without credentials, or "nvidia-smi").
	Source string `json:"source"`
	From   string `json:"from,omitempty"`
	// Samples is the number of readings inside the window, each of every GPU counted.
	Samples int `json:"samples"`
	// GPUs are the GPUs counted (gpu_metrics.match), in index order, with their own figures.
	GPUs []GPUReading `json:"gpus"`
	// PowerMeanW and PowerP95W are the mean and the p95 (type 7) over the window's readings of
	// the GPUs' total power, in W.
	PowerMeanW float64 `json:"power_mean_w"`
	PowerP95W  float64 `json:"power_p95_w"`
	// EnergyJ is the GPUs' total energy over the window, in J, the sum of theirs; nil when
	// some GPU's is unknown. EnergySource is EnergyFromCounter when every GPU's came from its
	// counter, else EnergyFromPower.
	EnergyJ      *float64 `json:"energy_j,omitempty"`
	EnergySource string   `json:"energy_source,omitempty"`
	// UtilPct is the mean of DCGM_FI_DEV_GPU_UTIL (nvidia-smi's utilization.gpu) over the GPUs
	// and readings, in percent; SMActive the mean of DCGM_FI_PROF_SM_ACTIVE (else
	// DCGM_FI_PROF_GR_ENGINE_ACTIVE), a fraction, where the exporter has profiling metrics.
	UtilPct  *float64 `json:"util_pct,omitempty"`
	SMActive *float64 `json:"sm_active,omitempty"`
	// FBUsedMiB is the largest framebuffer memory in use on one GPU, in MiB; SMClockMHz the
	// mean SM clock over the GPUs and readings.
	FBUsedMiB  *float64 `json:"fb_used_mib,omitempty"`
	SMClockMHz *float64 `json:"sm_clock_mhz,omitempty"`
}
