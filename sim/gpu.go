package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// The simulated GPUs (DESIGN §6, GPU power): a tensor-parallel replica of Config.GPUs GPUs,
// each drawing the same power, served on /metrics as NVIDIA's DCGM exporter serves real ones,
// so that kneecap's GPU telemetry has a ground truth.

const (
	// maxGPUs bounds Config.GPUs.
	maxGPUs = 64
	// DefaultIdleW and DefaultMaxW are the power model of a GPU when Config.Power is unset, in
	// W: about an H100 SXM's idle draw and its 700 W board power limit.
	DefaultIdleW = 100.0
	DefaultMaxW  = 700.0
)

// The simulated GPUs' constant figures and labels: an H100 SXM 80 GB serving vLLM, which
// reserves gpu_memory_utilization 0.9 of the card's 81,559 MiB at start (so the memory in
// use does not follow the load), at its 1,980 MHz maximum SM clock.
const (
	gpuModelName  = "NVIDIA H100 80GB HBM3"
	gpuHostname   = "kneecap-sim"
	gpuFBUsedMiB  = 73403 // ⌊0.9 × 81,559⌋
	gpuSMClockMHz = 1980
	saltGPU       = 0x67707520 // "gpu "
)

// PowerSlots is the denominator S of the power model: max_num_seqs in batching mode,
// fixed_slots in fixed mode when limited, else max_num_seqs (an unlimited fixed mode's
// running count is clamped to it).
func (c Config) PowerSlots() int {
	if c.Mode == modeFixed && c.FixedSlots > 0 {
		return c.FixedSlots
	}
	return c.MaxNumSeqs
}

// GPUPowerW is the power one simulated GPU draws while running requests run, in W:
// idle_w + (max_w − idle_w) × r ÷ S with r = running clamped to [0, S] (PowerSlots). It is
// linear, so a window's mean power is GPUPowerW of its mean running count (below S).
func (c Config) GPUPowerW(running float64) float64 {
	s := float64(c.PowerSlots())
	r := min(max(running, 0), s)
	return c.Power.IdleW + (c.Power.MaxW-c.Power.IdleW)*r/s
}

// energyMJ is one GPU's energy counter at reading b: ∫ P dt since the server started, in mJ,
// = 1000 × (idle_w × elapsed + (max_w − idle_w) × ∫ r dt ÷ S).
func (c Config) energyMJ(b busyReading) float64 {
	j := c.Power.IdleW*b.elapsed.Seconds() + (c.Power.MaxW-c.Power.IdleW)*b.area/float64(c.PowerSlots())
	return 1000 * j
}

// busyMeter integrates the running count over time exactly: the count is piecewise constant
// and set at each of its changes, so ∫ r dt is a sum of rectangles, whenever it is read. Its
// owner guards it (the engine's mu, the slot queue's mu, the server's fixedMu) and sets it
// under the lock that orders the count's changes.
type busyMeter struct {
	origin  time.Time     // the server's start; times are durations since it (monotonic)
	slots   int           // S: the count is clamped to [0, S]
	running int           // the clamped count since `since`
	since   time.Duration // when running last changed
	area    float64       // ∫ r dt over [0, since), in request-seconds
}

func newBusyMeter(origin time.Time, slots int) busyMeter {
	return busyMeter{origin: origin, slots: slots}
}

// set records that the running count became n at now (read under the owner's lock).
func (m *busyMeter) set(n int, now time.Time) {
	n = min(max(n, 0), m.slots)
	if n == m.running {
		return
	}
	t := now.Sub(m.origin)
	m.area += float64(m.running) * (t - m.since).Seconds()
	m.running, m.since = n, t
}

// busyReading is a busyMeter read at one instant.
type busyReading struct {
	running int           // the clamped running count
	elapsed time.Duration // since the server started
	area    float64       // ∫ r dt over [0, elapsed], in request-seconds
}

// read returns the meter at now (read under the owner's lock, after every set before it).
func (m *busyMeter) read(now time.Time) busyReading {
	t := now.Sub(m.origin)
	return busyReading{running: m.running, elapsed: t, area: m.area + float64(m.running)*(t-m.since).Seconds()}
}

// busy reads the running count's meter of whichever engine runs.
func (s *Server) busy() busyReading {
	switch {
	case s.eng != nil:
		return s.eng.busyAt()
	case s.fixedSlots != nil:
		return s.fixedSlots.busyAt()
	}
	s.fixedMu.Lock()
	defer s.fixedMu.Unlock()
	return s.fixedBusy.read(time.Now())
}

// fixedAdd changes the number of fixed-mode requests in flight (unlimited slots) by d,
// metering it when the server has GPUs.
func (s *Server) fixedAdd(d int64) {
	if s.cfg.GPUs == 0 {
		s.fixedRunning.Add(d)
		return
	}
	s.fixedMu.Lock()
	s.fixedBusy.set(int(s.fixedRunning.Add(d)), time.Now())
	s.fixedMu.Unlock()
}

// gpuLabels returns each simulated GPU's labels in dcgm-exporter's order: gpu, UUID,
// pci_bus_id, device, modelName, Hostname (NVIDIA/dcgm-exporter,
// internal/pkg/rendermetrics/render_metrics.go, gpuMetricsFormat).
func gpuLabels(gpus int) [][]*dto.LabelPair {
	out := make([][]*dto.LabelPair, gpus)
	pair := func(name, value string) *dto.LabelPair { return &dto.LabelPair{Name: ptr(name), Value: ptr(value)} }
	for i := range out {
		out[i] = []*dto.LabelPair{
			pair("gpu", strconv.Itoa(i)),
			pair("UUID", gpuUUID(i)),
			pair("pci_bus_id", fmt.Sprintf("00000000:%02X:00.0", i+1)),
			pair("device", "nvidia"+strconv.Itoa(i)),
			pair("modelName", gpuModelName),
			pair("Hostname", gpuHostname),
		}
	}
	return out
}

// gpuUUID is GPU i's UUID in NVIDIA's form (GPU-8-4-4-4-12 hex digits), drawn from i alone
// so that it is the same in every run.
func gpuUUID(i int) string {
	a := mix64(uint64(i)*0x9e3779b97f4a7c15 ^ saltGPU)
	b := mix64(a)
	return fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", a>>32, a>>16&0xffff, a&0xffff, b>>48, b&0xffffffffffff)
}

// gpuFamilies are the DCGM exporter's families of the simulated GPUs, one metric per GPU,
// all GPUs alike. Names, types and help texts are dcgm-exporter's (etc/default-counters.csv;
// DCGM_FI_PROF_SM_ACTIVE from etc/dcp-metrics-included.csv): power in W, the energy counter
// in mJ (the exact integral, fractional where the exporter reports whole mJ), utilisation in
// percent (100 while a request runs: DCGM counts the share of time a kernel runs), SM active
// as the fraction r ÷ S of the slots running, framebuffer in MiB and the SM clock in MHz.
func (s *Server) gpuFamilies() []*dto.MetricFamily {
	b := s.busy()
	util := 0.0
	if b.running > 0 {
		util = 100
	}
	fam := func(name, help string, counter bool, v float64) *dto.MetricFamily {
		f := &dto.MetricFamily{Name: ptr(name), Help: ptr(help), Type: dto.MetricType_GAUGE.Enum()}
		if counter {
			f.Type = dto.MetricType_COUNTER.Enum()
		}
		for _, l := range s.gpuLabels {
			m := &dto.Metric{Label: l}
			if counter {
				m.Counter = &dto.Counter{Value: ptr(v)}
			} else {
				m.Gauge = &dto.Gauge{Value: ptr(v)}
			}
			f.Metric = append(f.Metric, m)
		}
		return f
	}
	return []*dto.MetricFamily{
		fam("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", false, gpuSMClockMHz),
		fam("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", false, s.cfg.GPUPowerW(float64(b.running))),
		fam("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "Total energy consumption since boot (in mJ).", true, s.cfg.energyMJ(b)),
		fam("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", false, util),
		fam("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", false, gpuFBUsedMiB),
		fam("DCGM_FI_PROF_SM_ACTIVE", "The ratio of cycles an SM has at least 1 warp assigned.", false,
			float64(b.running)/float64(s.cfg.PowerSlots())),
	}
}

// ParsePower parses the --power flag's IDLE_W:MAX_W, two numbers of watts ("120:700").
func ParsePower(s string) (Power, error) {
	idle, maxW, ok := strings.Cut(s, ":")
	i, err1 := strconv.ParseFloat(strings.TrimSpace(idle), 64)
	m, err2 := strconv.ParseFloat(strings.TrimSpace(maxW), 64)
	if !ok || err1 != nil || err2 != nil {
		return Power{}, fmt.Errorf("%q is not IDLE_W:MAX_W, two numbers of watts such as 120:700", s)
	}
	return Power{IdleW: i, MaxW: m}, nil
}
