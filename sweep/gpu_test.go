package sweep

import (
	"errors"
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
	notes := mergeGPU(&run, parts, nil)
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
	if notes := mergeGPU(&run, parts, nil); len(notes) != 0 || *run.GPU.EnergyJ != 800 {
		t.Errorf("same window: notes %q, energy %g", notes, *run.GPU.EnergyJ)
	}
	run = record.LevelRun{W0: 0, W1: 8e9}
	if mergeGPU(&run, parts[:1], nil); run.GPU != nil {
		t.Errorf("no shard read GPUs: %+v", run.GPU)
	}
	// With the shard's readings to re-read, the merged window's own summary serves (its
	// 550 J, not 600 J scaled), from shard 1 over the merged window, without a note; a
	// re-read that fails falls back to the scaled figures with the reason.
	again := 550.0
	var asked [3]int64
	reread := func(shard int, w0, w1 int64) (*record.GPUStats, error) {
		asked = [3]int64{int64(shard), w0, w1}
		return &record.GPUStats{PowerMeanW: 91.7, EnergyJ: &again}, nil
	}
	run = record.LevelRun{W0: 1e9, W1: 7e9}
	if notes := mergeGPU(&run, parts, reread); len(notes) != 0 || *run.GPU.EnergyJ != 550 || run.GPU.Source != record.GPUFromDCGM ||
		asked != [3]int64{1, 1e9, 7e9} {
		t.Errorf("re-read: notes %q, GPU %+v, asked %v", notes, run.GPU, asked)
	}
	failing := func(int, int64, int64) (*record.GPUStats, error) { return nil, errors.New("disk gone") }
	run = record.LevelRun{W0: 1e9, W1: 7e9}
	if notes := mergeGPU(&run, parts, failing); len(notes) != 1 || !strings.Contains(notes[0], "disk gone") || *run.GPU.EnergyJ != 600 {
		t.Errorf("failed re-read: notes %q, energy %v", notes, *run.GPU.EnergyJ)
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
