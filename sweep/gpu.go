package sweep

import (
	"fmt"
	"time"

	"github.com/kneecap/kneecap/record"
)

// GPU telemetry of a level (DESIGN §3.10): the notes of a window whose GPU figures are
// missing, and the merge of the shards' figures.

// gpuNote is the level's note when GPU telemetry was read but did not measure the window:
// no reading in it, or too few around it for the energy.
func gpuNote(st *record.GPUStats) []string {
	switch {
	case st == nil:
		return []string{"GPU telemetry: no reading in the window: its power and energy are not measured"}
	case st.EnergyJ == nil:
		return []string{fmt.Sprintf("GPU telemetry: too few readings around the window (%d in it) for its energy: not measured", st.Samples)}
	}
	return nil
}

// mergeGPU sets run.GPU from the lowest-numbered shard that read GPU telemetry: the shards
// load the same GPUs, so the first shard's readings serve (the others' are not used). Where the
// merged window differs from that shard's, its readings are summarised again over the merged
// window (reread, its gpu_metrics.jsonl); when that fails or finds too few readings, the
// shard's energies are scaled to the merged window at its window's mean power, and a note
// says so.
func mergeGPU(run *record.LevelRun, parts []record.LevelRun, reread func(shard int, w0, w1 int64) (*record.GPUStats, error)) []string {
	for i, p := range parts {
		if p.GPU == nil {
			continue
		}
		st := *p.GPU
		run.GPU = &st
		if (p.W0 == run.W0 && p.W1 == run.W1) || p.W1 <= p.W0 {
			return nil
		}
		why := "no readings recorded"
		if reread != nil {
			again, err := reread(i, run.W0, run.W1)
			switch {
			case err != nil:
				why = "re-reading them failed: " + err.Error()
			case again != nil && again.EnergyJ != nil:
				again.Source, again.From = st.Source, st.From
				run.GPU = again
				return nil
			default:
				why = "too few readings around the merged window"
			}
		}
		f := float64(run.W1-run.W0) / float64(p.W1-p.W0)
		st.EnergyJ = scaled(st.EnergyJ, f)
		st.GPUs = append([]record.GPUReading(nil), st.GPUs...)
		for j := range st.GPUs {
			st.GPUs[j].EnergyJ = scaled(st.GPUs[j].EnergyJ, f)
		}
		return []string{fmt.Sprintf("GPU figures from shard %d/%d's window (%s; the merged window is %s), energy scaled to the merged window at that window's mean power (%s)",
			i, len(parts), time.Duration(p.W1-p.W0).Round(time.Millisecond), time.Duration(run.W1-run.W0).Round(time.Millisecond), why)}
	}
	return nil
}

// scaled returns v × f, nil for nil.
func scaled(v *float64, f float64) *float64 {
	if v == nil {
		return nil
	}
	s := *v * f
	return &s
}
