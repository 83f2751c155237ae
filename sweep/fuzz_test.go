package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// FuzzLoadDataset reads arbitrary bytes as a dataset file (ShareGPT JSON or JSONL, or
// {prompt, max_tokens} JSONL): no panic; an error names the file; a dataset that loads has
// usable entries and yields requests with a prompt and a non-negative max_tokens.
func FuzzLoadDataset(f *testing.F) {
	for _, s := range []string{
		`[{"conversations": [{"from": "human", "value": "hello there"}, {"from": "gpt", "value": "hi you"}]}]`,
		`{"prompt": "a b c", "max_tokens": 4}` + "\n" + `{"prompt": "d", "max_tokens": 2}` + "\n",
		"\xef\xbb\xbf" + `{"conversations": [{"from": "user", "value": "x"}, {"from": "assistant", "value": "y"}]}`,
		`[{"prompt": "x", "max_tokens": -1}]`, `[{"prompt": "x"}`, `{"other": 1}`, "\n\n", `[]`,
	} {
		f.Add([]byte(s), false)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, fixed bool) {
		p := filepath.Join(dir, "ds.jsonl")
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		cfg := workload.WorkloadConfig{Dataset: p, Seed: 1, FixedOutput: fixed}
		if fixed {
			cfg.OutputTokens = workload.Dist{Dist: workload.DistFixed, Mean: 8}
		}
		d, err := workload.LoadDataset(cfg, record.APIChat)
		if err != nil {
			if !strings.Contains(err.Error(), p) && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("error does not name the file: %v", err)
			}
			return
		}
		if d.Len() == 0 {
			t.Fatal("loaded a dataset without entries")
		}
		for seq := range 3 {
			r := d.Next(0, 0, seq)
			if r.PromptTokens < 1 || r.MaxTokens < 0 || (fixed && r.MaxTokens != 8) {
				t.Fatalf("request %+v", r)
			}
		}
	})
}
