package server

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// testdata/dcgm-exporter-mig.prom is an excerpt of the DCGM exporter's output as NVIDIA
// documents it: "DCGM Exporter publishes metrics for both the entire GPU as well as individual
// MIG devices", NVIDIA/cloud-native-docs gpu-telemetry/dcgm-exporter.rst (section
// "Multi-Instance GPU (MIG) Support"), published at
// https://docs.nvidia.com/datacenter/cloud-native/gpu-telemetry/latest/dcgm-exporter.html —
// the lines of the families kneecap reads (and one it does not, MEMORY_TEMP), with the
// exporter's A100 in MIG mode: one GPU-level series each, and a MIG instance's (GPU_I_ID 13)
// GR_ENGINE_ACTIVE. Its exporter collected the DCP profiling fields
// (dcp-metrics-included.csv) without DCGM_FI_DEV_GPU_UTIL, and predates the modelName label.
func TestParseDCGMDocumentedSample(t *testing.T) {
	f, err := os.Open(filepath.Join("testdata", "dcgm-exporter-mig.prom"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gs, err := ParseDCGM(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 {
		t.Fatalf("%d GPUs, want 1 (the MIG instance's series belong to GPU 0): %+v", len(gs), gs)
	}
	g := gs[0]
	want := record.GPU{Index: "0", UUID: "GPU-34319582-d595-d1c7-d1d2-179bcfa61660", Host: "ub20-a100-k8s"}
	if g.GPU != want {
		t.Errorf("GPU %+v, want %+v", g.GPU, want)
	}
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{
		{"power_w", g.PowerW, 409.692},
		{"energy_mj", g.EnergyMJ, 319159391},
		{"fb_used_mib", g.FBUsedMiB, 4845},
		{"sm_clock_mhz", g.SMClockMHz, 1215},
		// GR_ENGINE_ACTIVE without SM_ACTIVE; the GPU-level series, not the instance's 0.995687.
		{"sm_active", g.SMActive, 0.995630},
	} {
		if c.got == nil || *c.got != c.want {
			t.Errorf("%s = %v, want %g", c.name, deref(c.got), c.want)
		}
	}
	if g.UtilPct != nil {
		t.Errorf("util_pct = %g, want nil (the sample has no DCGM_FI_DEV_GPU_UTIL)", *g.UtilPct)
	}
}

// dcgmMultiGPU is built in the current exporter's format (its labels gpu, UUID, pci_bus_id,
// device, modelName, Hostname, DCGM_FI_DRIVER_VERSION, and container, namespace and pod where
// it maps a Kubernetes pod to the GPU; DCGM's int64 blank 9223372036854775794 where a field
// has no value, as in NVIDIA's README sample of DCGM_FI_DEV_MEMORY_TEMP): two GPUs on node-7,
// GPU 1 serving pod vllm-0, one GPU on node-8, SM_ACTIVE beside GR_ENGINE_ACTIVE.
const dcgmMultiGPU = `# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a0",pci_bus_id="00000000:53:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.105.08"} 67.5
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-a1",pci_bus_id="00000000:64:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.105.08",container="vllm",namespace="llm",pod="vllm-0"} 412.25
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-b0",pci_bus_id="00000000:53:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-8",DCGM_FI_DRIVER_VERSION="580.105.08"} 70
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a0",pci_bus_id="00000000:53:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.105.08"} 1000
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1",UUID="GPU-a1",pci_bus_id="00000000:64:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.105.08",container="vllm",namespace="llm",pod="vllm-0"} 2000
# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).
# TYPE DCGM_FI_DEV_GPU_UTIL gauge
DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a0",pci_bus_id="00000000:53:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.105.08"} 9223372036854775794
DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-a1",pci_bus_id="00000000:64:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.105.08",container="vllm",namespace="llm",pod="vllm-0"} 97
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-a1",pci_bus_id="00000000:64:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.105.08",container="vllm",namespace="llm",pod="vllm-0"} 0.81
# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-a1",pci_bus_id="00000000:64:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="580.105.08",container="vllm",namespace="llm",pod="vllm-0"} 0.99
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="llama"} 5
`

func TestParseDCGMMatch(t *testing.T) {
	for _, tc := range []struct {
		name  string
		match map[string]string
		want  []string // host/gpu of the GPUs counted, in order
	}{
		{"all", nil, []string{"node-7/0", "node-7/1", "node-8/0"}},
		{"host and indices", map[string]string{"Hostname": "node-7", "gpu": "0|1"}, []string{"node-7/0", "node-7/1"}},
		{"pod", map[string]string{"pod": "vllm-.*", "namespace": "llm"}, []string{"node-7/1"}},
		{"anchored", map[string]string{"Hostname": "node"}, nil},
		{"absent label reads empty", map[string]string{"pod": ""}, []string{"node-7/0", "node-8/0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := CompileGPUMatch(tc.match)
			if err != nil {
				t.Fatal(err)
			}
			gs, err := ParseDCGM(strings.NewReader(dcgmMultiGPU), m)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, g := range gs {
				got = append(got, g.Host+"/"+g.Index)
			}
			if strings.Join(got, " ") != strings.Join(tc.want, " ") {
				t.Errorf("GPUs %v, want %v", got, tc.want)
			}
		})
	}
}

// The values of each GPU: SM_ACTIVE before GR_ENGINE_ACTIVE, a blank read as not measured,
// the pod mapped, a family a GPU lacks nil.
func TestParseDCGMValues(t *testing.T) {
	gs, err := ParseDCGM(strings.NewReader(dcgmMultiGPU), nil)
	if err != nil {
		t.Fatal(err)
	}
	a0, a1, b0 := gs[0], gs[1], gs[2]
	if a1.Pod != "vllm-0" || a1.Namespace != "llm" || a1.Model != "NVIDIA H100 80GB HBM3" || a1.UUID != "GPU-a1" {
		t.Errorf("GPU 1 labels %+v", a1.GPU)
	}
	if deref(a1.PowerW) != "412.25" || deref(a1.EnergyMJ) != "2000" || deref(a1.UtilPct) != "97" || deref(a1.SMActive) != "0.81" {
		t.Errorf("GPU 1 power %s energy %s util %s sm_active %s, want 412.25 2000 97 0.81",
			deref(a1.PowerW), deref(a1.EnergyMJ), deref(a1.UtilPct), deref(a1.SMActive))
	}
	if a0.UtilPct != nil || a0.SMActive != nil || deref(a0.PowerW) != "67.5" {
		t.Errorf("GPU 0 util %s (blank), sm_active %s, power %s", deref(a0.UtilPct), deref(a0.SMActive), deref(a0.PowerW))
	}
	if b0.EnergyMJ != nil || deref(b0.PowerW) != "70" {
		t.Errorf("node-8 GPU 0 energy %s (none served), power %s", deref(b0.EnergyMJ), deref(b0.PowerW))
	}
}

// A GPU in MIG mode whose exporter monitors its instances only (-d i): the device fields
// repeat the GPU's value on each instance, read once for the GPU from the first instance.
func TestParseDCGMInstancesOnly(t *testing.T) {
	text := `DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-m",GPU_I_PROFILE="2g.20gb",GPU_I_ID="3",Hostname="h"} 250
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-m",GPU_I_PROFILE="2g.20gb",GPU_I_ID="5",Hostname="h"} 250
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-m",GPU_I_PROFILE="2g.20gb",GPU_I_ID="3",Hostname="h"} 1410
`
	gs, err := ParseDCGM(strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 1 || deref(gs[0].PowerW) != "250" || deref(gs[0].SMClockMHz) != "1410" {
		t.Fatalf("GPUs %+v, want one at 250 W, 1410 MHz", gs)
	}
}

func TestCompileGPUMatchError(t *testing.T) {
	_, err := CompileGPUMatch(map[string]string{"gpu": "(0|1"})
	if err == nil || !strings.Contains(err.Error(), "gpu_metrics.match.gpu") {
		t.Errorf("err = %v, want one naming gpu_metrics.match.gpu", err)
	}
}

func TestDescribeGPUs(t *testing.T) {
	h100 := "NVIDIA H100 80GB HBM3"
	gs := []GPUValue{{GPU: record.GPU{Index: "0", Model: h100, Host: "node-7"}}, {GPU: record.GPU{Index: "1", Model: h100, Host: "node-7"}}}
	if got, want := DescribeGPUs(gs), "2 GPUs: 0, 1 NVIDIA H100 80GB HBM3 on node-7"; got != want {
		t.Errorf("DescribeGPUs = %q, want %q", got, want)
	}
}

// deref formats a value for messages: its number, or "nil".
func deref(v *float64) string {
	if v == nil {
		return "nil"
	}
	return strconv.FormatFloat(*v, 'g', -1, 64)
}

// Labels an exporter gives are clipped like any server-given text (no control characters,
// at most 64 characters), and GPUs with huge indices still sort by index.
func TestDCGMLabelsClipped(t *testing.T) {
	long := strings.Repeat("h", 200)
	text := "DCGM_FI_DEV_POWER_USAGE{gpu=\"9223372036854775807\",UUID=\"GPU-a\",modelName=\"H100\\u001b[2J\",Hostname=\"" + long + "\"} 300\n" +
		"DCGM_FI_DEV_POWER_USAGE{gpu=\"-9223372036854775808\",UUID=\"GPU-b\",modelName=\"H100\",Hostname=\"" + long + "\"} 300\n"
	text = strings.ReplaceAll(text, `\u001b`, "\x1b")
	gs, err := ParseDCGM(strings.NewReader(text), GPUMatch{})
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].UUID != "GPU-b" {
		t.Fatalf("GPUs %+v, want GPU-b (the smaller index) first", gs)
	}
	for _, g := range gs {
		if strings.ContainsRune(g.Model, 0x1b) || len([]rune(g.Host)) > 64 {
			t.Errorf("GPU %q: model %q, host of %d characters; want clipped", g.UUID, g.Model, len([]rune(g.Host)))
		}
	}
}
