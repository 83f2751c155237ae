package server

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/kneecap/kneecap/record"
)

// GPU telemetry (DESIGN §3.10): the readings of the GPUs serving the target, from the DCGM
// exporter's Prometheus text (its own endpoint or the server's metrics scrape) or from
// nvidia-smi, summarised per window into record.GPUStats.

// GPUMetricsConfig configures GPU telemetry (gpu_metrics).
type GPUMetricsConfig struct {
	// URLs are DCGM exporter endpoints (http://host:9400/metrics) read every interval;
	// ["off"] disables GPU telemetry. Empty: the DCGM families of the server's metrics scrape,
	// else the exporter at the target's host (:9400/metrics) when it answers at launch.
	URLs []string `yaml:"urls,omitempty"`
	// Source is GPUSourceDCGM (or empty), GPUSourceNvidiaSMI or GPUSourceOff.
	Source string `yaml:"source"`
	// Match selects the GPUs counted: label name → regular expression, matched against the
	// whole label value (as Prometheus's =~); a GPU is counted when every one matches. The
	// labels are the exporter's (gpu, UUID, modelName, Hostname, pod, namespace, …); nvidia-smi
	// GPUs have gpu, UUID, modelName and Hostname. Empty: every GPU.
	Match map[string]string `yaml:"match,omitempty"`
	// Interval is the sampling interval (the server scrape's when its families are used).
	Interval time.Duration `yaml:"interval"`
}

// Sources of gpu_metrics.source (--gpu-metrics).
const (
	GPUSourceDCGM      = "dcgm"
	GPUSourceNvidiaSMI = "nvidia-smi"
	GPUSourceOff       = "off"
)

// Off reports whether GPU telemetry is disabled (source off, or urls [off]).
func (c GPUMetricsConfig) Off() bool {
	return c.Source == GPUSourceOff || slices.Contains(c.URLs, GPUSourceOff)
}

// GPUSample is one reading of the GPUs counted: a line of gpu_metrics.jsonl.
type GPUSample struct {
	// TUnixNS is the reading's time in Unix nanoseconds (the midpoint of its requests).
	TUnixNS int64      `json:"t_unix_ns"`
	GPUs    []GPUValue `json:"gpus"`
}

// GPUValue is one GPU's figures in one reading; a figure its source did not give is nil.
type GPUValue struct {
	record.GPU
	// PowerW is DCGM_FI_DEV_POWER_USAGE (nvidia-smi power.draw), in W.
	PowerW *float64 `json:"power_w,omitempty"`
	// EnergyMJ is DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, the energy counter since the
	// driver's last reset, in mJ.
	EnergyMJ *float64 `json:"energy_mj,omitempty"`
	// UtilPct is DCGM_FI_DEV_GPU_UTIL (utilization.gpu), in percent.
	UtilPct *float64 `json:"util_pct,omitempty"`
	// SMActive is DCGM_FI_PROF_SM_ACTIVE, else DCGM_FI_PROF_GR_ENGINE_ACTIVE, a fraction.
	SMActive *float64 `json:"sm_active,omitempty"`
	// FBUsedMiB is DCGM_FI_DEV_FB_USED (memory.used), in MiB.
	FBUsedMiB *float64 `json:"fb_used_mib,omitempty"`
	// SMClockMHz is DCGM_FI_DEV_SM_CLOCK (clocks.sm), in MHz.
	SMClockMHz *float64 `json:"sm_clock_mhz,omitempty"`
}

// key identifies the GPU across readings: its host and UUID, else its host and index.
func (v *GPUValue) key() string {
	if v.UUID != "" {
		return v.Host + "/" + v.UUID
	}
	return v.Host + "/#" + v.Index
}

// GPUMatch selects GPUs by their labels (gpu_metrics.match); nil matches every GPU.
type GPUMatch map[string]*regexp.Regexp

// CompileGPUMatch compiles gpu_metrics.match, each expression anchored at both ends as a
// Prometheus label matcher is.
func CompileGPUMatch(m map[string]string) (GPUMatch, error) {
	if len(m) == 0 {
		return nil, nil
	}
	out := GPUMatch{}
	for label, expr := range m {
		re, err := regexp.Compile("^(?:" + expr + ")$")
		if err != nil {
			return nil, fmt.Errorf("gpu_metrics.match.%s: %q: %w", label, expr, err)
		}
		out[label] = re
	}
	return out, nil
}

// matches reports whether the labels (an absent one reads "") match every expression.
func (m GPUMatch) matches(labels map[string]string) bool {
	for name, re := range m {
		if !re.MatchString(labels[name]) {
			return false
		}
	}
	return true
}

// The DCGM exporter's families read (default-counters.csv; the DCP profiling fields where the
// exporter collects them).
const (
	dcgmPower    = "DCGM_FI_DEV_POWER_USAGE"
	dcgmEnergy   = "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
	dcgmUtil     = "DCGM_FI_DEV_GPU_UTIL"
	dcgmSMActive = "DCGM_FI_PROF_SM_ACTIVE"
	dcgmGRActive = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
	dcgmFBUsed   = "DCGM_FI_DEV_FB_USED"
	dcgmSMClock  = "DCGM_FI_DEV_SM_CLOCK"
)

// dcgmBlank is DCGM_FP64_BLANK (2^47): DCGM marks a value it has not got with a number at or
// above it (the int64 blanks are near 2^63, as DCGM_FI_DEV_MEMORY_TEMP's 9223372036854775794
// in NVIDIA's own sample); such a value is not a reading.
const dcgmBlank = 140737488355328.0

// dcgmField is a family and where its value goes in a GPUValue.
type dcgmField struct {
	name string
	dst  func(*gpuSeries) **float64
}

// gpuSeries is a GPU's values while its families are read; gr holds GR_ENGINE_ACTIVE until
// SM_ACTIVE is known absent, and whole marks the fields a GPU-level series set.
type gpuSeries struct {
	v     GPUValue
	gr    *float64
	whole map[string]bool
}

var dcgmFields = []dcgmField{
	{dcgmPower, func(g *gpuSeries) **float64 { return &g.v.PowerW }},
	{dcgmEnergy, func(g *gpuSeries) **float64 { return &g.v.EnergyMJ }},
	{dcgmUtil, func(g *gpuSeries) **float64 { return &g.v.UtilPct }},
	{dcgmSMActive, func(g *gpuSeries) **float64 { return &g.v.SMActive }},
	{dcgmGRActive, func(g *gpuSeries) **float64 { return &g.gr }},
	{dcgmFBUsed, func(g *gpuSeries) **float64 { return &g.v.FBUsedMiB }},
	{dcgmSMClock, func(g *gpuSeries) **float64 { return &g.v.SMClockMHz }},
}

// ParseDCGM parses Prometheus text and returns the GPUs of its DCGM families that match m.
func ParseDCGM(r io.Reader, m GPUMatch) ([]GPUValue, error) {
	fams, err := parseFamilies(r)
	if err != nil {
		return nil, err
	}
	return dcgmGPUs(fams, m), nil
}

// dcgmGPUs returns the GPUs of the DCGM families in fams whose series match m, in order of
// host and index. A series is a GPU's when it has a UUID or gpu label; a MIG instance's
// series (a GPU_I_ID label) counts toward its GPU only where the GPU has no GPU-level series
// of that family (device fields such as power, energy and clocks repeat the GPU's value on
// each instance), the first instance's then.
func dcgmGPUs(fams map[string]*dto.MetricFamily, m GPUMatch) []GPUValue {
	byKey := map[string]*gpuSeries{}
	for _, f := range dcgmFields {
		fam, ok := fams[f.name]
		if !ok {
			continue
		}
		for _, metric := range fam.GetMetric() {
			labels := labelMap(metric)
			g := GPUValue{GPU: clipGPU(record.GPU{Index: labels["gpu"], UUID: labels["UUID"], Model: labels["modelName"],
				Host: labels["Hostname"], Pod: labels["pod"], Namespace: labels["namespace"]})}
			v, ok := metricValue(metric)
			if (g.UUID == "" && g.Index == "") || !ok || !m.matches(labels) {
				continue
			}
			s := byKey[g.key()]
			if s == nil {
				s = &gpuSeries{v: g, whole: map[string]bool{}}
				byKey[g.key()] = s
			}
			instance := labels["GPU_I_ID"] != ""
			dst := f.dst(s)
			if instance && (*dst != nil || s.whole[f.name]) {
				continue
			}
			if !instance {
				s.whole[f.name] = true
				if s.v.Pod == "" && s.v.Namespace == "" {
					s.v.Pod, s.v.Namespace = g.Pod, g.Namespace
				}
			}
			*dst = &v
		}
	}
	out := make([]GPUValue, 0, len(byKey))
	for _, s := range byKey {
		if s.v.SMActive == nil {
			s.v.SMActive = s.gr
		}
		out = append(out, s.v)
	}
	sortGPUs(out)
	return out
}

// labelMap returns a series' labels by name.
func labelMap(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// metricValue returns a gauge's, counter's or untyped series' value; ok is false for another
// type, NaN, ±Inf and DCGM's blanks.
func metricValue(m *dto.Metric) (v float64, ok bool) {
	switch {
	case m.Gauge != nil:
		v = m.GetGauge().GetValue()
	case m.Counter != nil:
		v = m.GetCounter().GetValue()
	case m.Untyped != nil:
		v = m.GetUntyped().GetValue()
	default:
		return 0, false
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= dcgmBlank {
		return 0, false
	}
	return v, true
}

// sortGPUs orders GPUs by host, then index (numerically where both are numbers), then UUID.
func sortGPUs(gs []GPUValue) {
	slices.SortStableFunc(gs, func(a, b GPUValue) int { return compareGPU(a.GPU, b.GPU) })
}

// clipGPU returns g with every label clipped as any server-given text is (clip: no control
// characters, at most 64 characters): the console, the reports and levels.json print them.
func clipGPU(g record.GPU) record.GPU {
	return record.GPU{Index: clip(g.Index), UUID: clip(g.UUID), Model: clip(g.Model), Host: clip(g.Host),
		Pod: clip(g.Pod), Namespace: clip(g.Namespace)}
}

// compareGPU orders two GPUs by host, index and UUID.
func compareGPU(a, b record.GPU) int {
	if c := strings.Compare(a.Host, b.Host); c != 0 {
		return c
	}
	ai, aerr := strconv.Atoi(a.Index)
	bi, berr := strconv.Atoi(b.Index)
	if aerr == nil && berr == nil && ai != bi {
		return cmp.Compare(ai, bi)
	}
	if c := strings.Compare(a.Index, b.Index); c != 0 {
		return c
	}
	return strings.Compare(a.UUID, b.UUID)
}

// DescribeGPUs names GPUs in one line: "2 GPUs: 0, 1 NVIDIA H100 80GB HBM3 on node-7", the
// models and hosts listed once each.
func DescribeGPUs(gs []GPUValue) string {
	if len(gs) == 0 {
		return "no GPU"
	}
	var idx, models, hosts []string
	for _, g := range gs {
		idx = append(idx, cmp.Or(g.Index, g.UUID))
		if g.Model != "" && !slices.Contains(models, g.Model) {
			models = append(models, g.Model)
		}
		if g.Host != "" && !slices.Contains(hosts, g.Host) {
			hosts = append(hosts, g.Host)
		}
	}
	s := fmt.Sprintf("%d GPU", len(gs))
	if len(gs) > 1 {
		s += "s"
	}
	s += ": " + strings.Join(idx, ", ")
	if len(models) > 0 {
		s += " " + strings.Join(models, ", ")
	}
	if len(hosts) > 0 {
		s += " on " + strings.Join(hosts, ", ")
	}
	return s
}
