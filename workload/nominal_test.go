package workload

import "testing"

// TestNominal: the nominal lengths are the means the workload's draws have, exactly where
// they are known (checked against the draws themselves), and 0 where they are not.
func TestNominal(t *testing.T) {
	for _, tt := range []struct {
		d    Dist
		want float64
	}{
		{Dist{Dist: DistFixed, Mean: 512}, 512},
		{Dist{Dist: DistFixed, Mean: 512, Max: 300}, 300},
		{Dist{Dist: DistFixed, Mean: 10, Min: 20}, 20},
		{Dist{Dist: DistUniform, Min: 10, Max: 20}, 15},
		{Dist{Dist: DistUniform, Min: 1.5, Max: 4.5}, 3}, // draws 2, 3, 4
		{Dist{Dist: distNormal, Mean: 100, StdDev: 10}, 100},
		{Dist{Dist: distNormal, Mean: 100, StdDev: 10, Min: 50}, 0},
		{Dist{Dist: distLognormal, Mean: 100, StdDev: 50}, 100},
		{Dist{Dist: "zipf", Mean: 100}, 0},
		{Dist{}, 0},
	} {
		if got := tt.d.Nominal(); got != tt.want {
			t.Errorf("%+v: Nominal %g, want %g", tt.d, got, tt.want)
		}
		if tt.want == 0 || tt.d.Dist == distNormal || tt.d.Dist == distLognormal {
			continue
		}
		s := newSampler(tt.d)
		r := requestRand(1, 0, 0, 0)
		sum := 0
		const n = 20000
		for range n {
			sum += s.Draw(r)
		}
		if mean := float64(sum) / n; mean < tt.want*0.99 || mean > tt.want*1.01 {
			t.Errorf("%+v: draws average %g, Nominal %g (want within 1%%)", tt.d, mean, tt.want)
		}
	}
	w := WorkloadConfig{InputTokens: Dist{Dist: DistFixed, Mean: 64}, OutputTokens: Dist{Dist: DistFixed, Mean: 32}}
	if in, out := w.NominalLengths(); in != 64 || out != 32 {
		t.Errorf("synthetic: %g, %g", in, out)
	}
	w.Dataset = "x.jsonl"
	if in, out := w.NominalLengths(); in != 0 || out != 0 {
		t.Errorf("dataset: %g, %g, want 0, 0 (each text has its own)", in, out)
	}
	w.FixedOutput = true
	if in, out := w.NominalLengths(); in != 0 || out != 32 {
		t.Errorf("dataset with fixed output_tokens: %g, %g, want 0, 32", in, out)
	}
}
