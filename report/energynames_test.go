package report

import (
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// The GPUs counted are named, grouped by model and host, with the match that selected them;
// a narrow interval prints its ends apart.
func TestGPUsNamedAndNarrowInterval(t *testing.T) {
	m := analysis.Meta{GPUs: []record.GPU{{Index: "0", Model: "H100", Host: "n7"}, {Index: "1", Model: "H100", Host: "n7"}, {Index: "0", Host: "n8"}},
		GPUMatch: "Hostname=n7|n8"}
	want := ": 2 × H100 on n7 (gpu 0, 1); 1 × GPU on n8 (gpu 0), selected by gpu_metrics.match Hostname=n7|n8"
	if got := gpusNamed(m); got != want {
		t.Errorf("gpusNamed = %q, want %q", got, want)
	}
	if got := gpusNamed(analysis.Meta{}); got != "" {
		t.Errorf("no GPUs named: %q", got)
	}
	if lo, hi := fspan(10.0653, 10.0819); lo != "10.07" || hi != "10.08" {
		t.Errorf("fspan = %s–%s, want 10.07–10.08", lo, hi)
	}
	if lo, hi := fspan(8.9, 12.1); lo != "8.90" || hi != "12.1" {
		t.Errorf("fspan = %s–%s, want fnum's 8.90–12.1", lo, hi)
	}
}
