package workload

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// shareGPT is shaped like ShareGPT_V3_unfiltered_cleaned_split.json: an array of
// {id, conversations: [{from, value}]}; entry 2 has no human turn and is skipped.
const shareGPT = `[
 {"id": "a", "conversations": [{"from": "system", "value": "be nice"}, {"from": "human", "value": "what is a knee"},
   {"from": "gpt", "value": "the point where the curve bends over"}, {"from": "human", "value": "ok"}]},
 {"id": "b", "conversations": [{"from": "human", "value": "hello"}, {"from": "gpt", "value": "hi there"}]},
 {"id": "c", "conversations": [{"from": "gpt", "value": "orphan"}]}
]`

func TestDatasetShareGPTJSON(t *testing.T) {
	p := writeFile(t, "sg.json", shareGPT)
	d, err := LoadDataset(WorkloadConfig{Dataset: p, Seed: 3}, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 2 || d.Skipped != 1 {
		t.Fatalf("len %d skipped %d, want 2 and 1", d.Len(), d.Skipped)
	}
	seen := map[string]record.Request{}
	for i := range 100 {
		r := d.Next(0, i%4, i)
		seen[r.Prompt] = r
		if r2 := d.Next(0, i%4, i); !reflect.DeepEqual(r2, r) {
			t.Fatal("not deterministic")
		}
	}
	want := map[string][2]int{"what is a knee": {4, 7}, "hello": {1, 2}}
	if len(seen) != 2 {
		t.Fatalf("sampled prompts %v", seen)
	}
	for p, r := range seen {
		if w := want[p]; r.PromptTokens != w[0] || r.MaxTokens != w[1] || r.IgnoreEOS {
			t.Errorf("%q: tokens %d max %d eos %v, want %v", p, r.PromptTokens, r.MaxTokens, r.IgnoreEOS, w)
		}
	}
	// fixed_output with a distribution overrides the reply length.
	d, err = LoadDataset(WorkloadConfig{Dataset: p, FixedOutput: true, OutputTokens: Dist{Dist: DistFixed, Mean: 33}}, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Next(1, 1, 1); r.MaxTokens != 33 || !r.IgnoreEOS {
		t.Errorf("fixed output: %+v", r)
	}
}

func TestDatasetJSONL(t *testing.T) {
	p := writeFile(t, "p.jsonl", `{"prompt": "one two three", "max_tokens": 5}

{"conversations": [{"from": "user", "value": "a b"}, {"from": "assistant", "value": "c d e f"}]}
`)
	d, err := LoadDataset(WorkloadConfig{Dataset: p}, record.APICompletions)
	if err != nil {
		t.Fatal(err)
	}
	if d.Len() != 2 {
		t.Fatalf("len %d", d.Len())
	}
	got := map[string]int{}
	for i := range 50 {
		r := d.Next(0, 0, i)
		got[r.Prompt] = r.MaxTokens
	}
	if got["one two three"] != 5 || got["a b"] != 4 {
		t.Errorf("got %v", got)
	}
}

func TestDatasetErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content, want string
	}{
		{"bad.jsonl", "{\"prompt\": \"ok\", \"max_tokens\": 1}\n{\"prompt\": oops}\n", "bad.jsonl:2:"},
		{"neither.jsonl", "{\"text\": \"x\"}\n", "neither.jsonl:1:"},
		{"neg.jsonl", "{\"prompt\": \"x\", \"max_tokens\": -3}\n", "neg.jsonl:1:"},
		{"empty.json", "   \n", "empty.json"},
		{"allskipped.json", `[{"conversations": [{"from": "gpt", "value": "x"}]}]`, "no usable entries"},
		{"badarray.json", `[{"conversations": []}, {"conversations": 5}]`, "entry 1"},
	}
	for _, tt := range tests {
		p := filepath.Join(dir, tt.name)
		if err := os.WriteFile(p, []byte(tt.content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadDataset(WorkloadConfig{Dataset: p}, record.APIChat)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%s: error %v, want it to name %q", tt.name, err, tt.want)
		}
	}
	missing := filepath.Join(dir, "missing.json")
	if _, err := NewWorkload(WorkloadConfig{Dataset: missing, OutputTokens: Dist{Dist: DistFixed, Mean: 1}}, record.APIChat); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("missing file: %v", err)
	}
}
