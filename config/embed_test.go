package config

import (
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestEmbeddingsConfig: workload.batch and target.api embeddings load together, the default
// SLO's TTFT and TPOT are left out of the analysis options (and the output lengths), and the
// combinations that cannot be embedded are refused at their FILE:LINE.
func TestEmbeddingsConfig(t *testing.T) {
	c, err := Load(writeConfig(t, "target: {api: embeddings}\nworkload:\n  batch: 4\nslo: {e2e_p95: 200ms}\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := c.AnalysisOptions()
	if c.Workload.Batch != 4 || o.API != record.APIEmbeddings || len(o.SLO.Objectives()) != 1 || o.SLO.E2EP95 != 200*time.Millisecond {
		t.Errorf("batch %d api %q slo %+v", c.Workload.Batch, o.API, o.SLO.Objectives())
	}
	d, err := Load(writeConfig(t, "target: {api: embeddings}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if o := d.AnalysisOptions(); o.SLO.Any() || o.Lengths.FixedOutput || o.Lengths.OutputTokens != 0 {
		t.Errorf("default embeddings options: slo %+v lengths %+v", o.SLO.Objectives(), o.Lengths)
	}
	for _, tc := range []struct{ name, yaml, want string }{
		{"batch with chat", "workload:\n  batch: 2\n", ":2: workload.batch: is 2, but target.api is chat"},
		{"negative batch", "target: {api: embeddings}\nworkload:\n  batch: -1\n", ":3: workload.batch: is -1: must be ≥ 1"},
		{"ttft slo", "target: {api: embeddings}\nslo:\n  ttft_p95: 1s\n", ":3: slo.ttft_p95: an embeddings answer (target.api embeddings) arrives whole"},
		{"sessions", "target: {api: embeddings}\nworkload:\n  sessions: {turns: {dist: fixed, mean: 2}}\n", ":3: workload.sessions: an embeddings request"},
		{"cancel", "target: {api: embeddings}\nworkload:\n  cancel:\n    fraction: 0.2\n    after: {dist: fixed, mean: 2s}\n", ":3: workload.cancel: an embeddings answer (target.api embeddings) arrives whole"},
		{"unknown api", "target: {api: rerank}\n", `:1: target.api: "rerank": must be one of chat, completions, responses, messages or embeddings`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
