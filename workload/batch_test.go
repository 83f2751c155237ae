package workload

import (
	"slices"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// TestBatch: an embeddings request carries workload.batch inputs, the prompts of consecutive
// sequence numbers, PromptTokens their sum and no output length; the same (level, worker,
// seq) gives the same request; other APIs keep the workload as it is.
func TestBatch(t *testing.T) {
	cfg := WorkloadConfig{InputTokens: Dist{Dist: DistFixed, Mean: 16}, OutputTokens: Dist{Dist: DistFixed, Mean: 8}, FixedOutput: true, Seed: 3}
	w, err := NewWorkload(cfg, record.APIEmbeddings)
	if err != nil {
		t.Fatal(err)
	}
	if Batch(w, record.APIChat, 4) != w {
		t.Error("a chat workload was batched")
	}
	b := Batch(w, record.APIEmbeddings, 3)
	req := b.Next(1, 2, 5)
	if len(req.Inputs) != 3 || req.PromptTokens != 48 || req.MaxTokens != 0 || req.IgnoreEOS || req.Prompt != "" {
		t.Fatalf("request %+v: want 3 inputs of 16 tokens and no output", req)
	}
	for i, in := range req.Inputs {
		if want := w.Next(1, 2, 15+i).Prompt; in != want || len(strings.Fields(in)) != 16 {
			t.Errorf("input %d = %q, want the prompt of seq %d", i, in, 15+i)
		}
	}
	if again := b.Next(1, 2, 5); !slices.Equal(again.Inputs, req.Inputs) {
		t.Error("the same request drew other inputs")
	}
	if one := Batch(w, record.APIEmbeddings, 0).Next(0, 0, 0); len(one.Inputs) != 1 {
		t.Errorf("batch 0 gave %d inputs, want 1", len(one.Inputs))
	}
}
