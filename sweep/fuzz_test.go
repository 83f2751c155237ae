package sweep

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzConfigValidate decodes arbitrary YAML and validates what decoded: neither panics, every
// problem is one line, and every problem of a config read from a file names that file
// (FuzzParseConfig in load_test.go covers the decoder alone).
func FuzzConfigValidate(f *testing.F) {
	for _, s := range []string{
		"sweep: {levels: [4, 2], warmup: -1s, warmup_max: 1s}\n",
		"target: {url: 'http://u:p@h/v1?api_key=x', tls: {ca_file: /nonexistent}}\n",
		"workload: {input_tokens: {dist: uniform, min: 5, max: 1}, output_tokens: {dist: lognormal, mean: 10}}\n",
		"sweep: {levels: {start: 1, max: 1000000, factor: 1.0000001}}\n",
		"simulator: {max_num_seqs: -1, faults: {error_rate: 2}}\nname: ../x\n",
		"slo: {ttft_p95: 1h}\nplan: {qps: .nan, replica_cost_per_hour: -1}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseConfig("f.yaml", []byte(s))
		if err != nil {
			return
		}
		err = c.Validate()
		for _, p := range Problems(err) {
			if !strings.HasPrefix(p, "f.yaml") {
				t.Errorf("problem does not name the file: %q", p)
			}
		}
		_ = c.Redacted()
	})
}

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
		cfg := WorkloadConfig{Dataset: p, Seed: 1, FixedOutput: fixed}
		if fixed {
			cfg.OutputTokens = Dist{Dist: DistFixed, Mean: 8}
		}
		d, err := LoadDataset(cfg, APIChat)
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
