package plots

import (
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// TestEmbeddingsLatencyLabels: an embeddings run's latency-vs-throughput chart labels each
// level "N=c" at the input tokens/s its points are drawn at, not at its output TPS (0).
func TestEmbeddingsLatencyLabels(t *testing.T) {
	res := &analysis.Result{Meta: analysis.Meta{Name: "emb", API: record.APIEmbeddings}}
	for _, c := range []int{1, 2, 4} {
		f := analysis.Float(10 * c)
		res.Levels = append(res.Levels, analysis.Level{Concurrency: c, Requests: 100, Valid: true, Steady: true,
			InputTPS: analysis.Float(1000 * c), E2E: analysis.Latency{Mean: f, P50: f, P90: f, P95: f, P99: f}})
	}
	b, err := latencyVsThroughputChart(res)
	if err != nil {
		t.Fatal(err)
	}
	if b.labels == nil || len(b.labels.pts) != len(res.Levels) {
		t.Fatalf("labels %+v, want one a level", b.labels)
	}
	for i, p := range b.labels.pts {
		if want := float64(res.Levels[i].InputTPS); p.x != want {
			t.Errorf("label %q at x=%g, want the level's input TPS %g", p.text, p.x, want)
		}
	}
}
