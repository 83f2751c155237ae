package sweep

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// The merge keeps the lowest-numbered shard's GPU figures that has them; over a merged window
// of 6 s within the shard's 8 s, its 800 J (100 W) become 600 J, and a note says so.
func TestMergeGPU(t *testing.T) {
	e, g := 800.0, 800.0
	st := &record.GPUStats{Source: record.GPUFromDCGM, PowerMeanW: 100, EnergyJ: &e,
		GPUs: []record.GPUReading{{GPU: record.GPU{Index: "0"}, PowerMeanW: 100, EnergyJ: &g}}}
	parts := []record.LevelRun{{W0: 0, W1: 8e9}, {W0: 0, W1: 8e9, GPU: st}}
	run := record.LevelRun{W0: 1e9, W1: 7e9}
	notes := mergeGPU(&run, parts)
	if run.GPU == nil || *run.GPU.EnergyJ != 600 || *run.GPU.GPUs[0].EnergyJ != 600 || run.GPU.PowerMeanW != 100 {
		t.Fatalf("merged GPU %+v, want 100 W and 600 J", run.GPU)
	}
	if e != 800 || g != 800 {
		t.Errorf("the shard's figures changed: %g, %g J", e, g)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "shard 1/2") {
		t.Errorf("notes %q, want one naming shard 1/2", notes)
	}
	run = record.LevelRun{W0: 0, W1: 8e9}
	if notes := mergeGPU(&run, parts); len(notes) != 0 || *run.GPU.EnergyJ != 800 {
		t.Errorf("same window: notes %q, energy %g", notes, *run.GPU.EnergyJ)
	}
	run = record.LevelRun{W0: 0, W1: 8e9}
	if mergeGPU(&run, parts[:1]); run.GPU != nil {
		t.Errorf("no shard read GPUs: %+v", run.GPU)
	}
}

func TestGPUNote(t *testing.T) {
	e := 1.0
	for _, tc := range []struct {
		st   *record.GPUStats
		want string
	}{
		{nil, "no reading in the window"},
		{&record.GPUStats{Samples: 1}, "too few readings around the window (1 in it)"},
		{&record.GPUStats{Samples: 9, EnergyJ: &e}, ""},
	} {
		got := strings.Join(gpuNote(tc.st), "")
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("gpuNote(%+v) = %q, want %q", tc.st, got, tc.want)
		}
	}
}
