package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/workload/hftokenizer/hftest"
)

// subwordSweepConfig is a three-level sweep of the simulator in subword mode (⌈n ÷ 4⌉ tokens
// for a word of n bytes: about 1.64 tokens for a word of kneecap's sized vocabulary) with a
// 40-token chat template; %s is the workload's prompt-sizing keys.
const subwordSweepConfig = `simulator: {tokenizer: subword, chat_template_tokens: 40}
workload:
  output_tokens: {dist: fixed, mean: 16}
%s
sweep:
  levels: [1, 2, 4]
  warmup: 100ms
  duration: 500ms
  min_requests: 5
  max_duration: 1s
  refine: 0
target: {server_info: false}
`

// TestPromptLengthsInServerTokens is issue 12's acceptance of prompt sizing (DESIGN §3.6):
// against the simulator in subword mode with a 40-token chat template, `kneecap sweep
// --input-tokens 512` sends prompts whose length as the server counts it (usage.prompt_tokens
// in records.jsonl) has its p50 within ±2% of 512 at every level, by each method: the
// simulator's POST /tokenize, usage calibration, and a tokenizer file (hftest's fixture, which
// counts as the subword rule). levels.json and the report record the method. (The words
// method, kneecap's prompts before sizing, gives 512 words: about 40 + 512 × 1.67 ≈ 900
// tokens.)
func TestPromptLengthsInServerTokens(t *testing.T) {
	t.Parallel()
	tok := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := hftest.WriteSubwordTokenizer(tok); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		method, keys string
		exact        bool
	}{
		{record.SizingTokenize, "  prompt_sizing: tokenize", true},
		{record.SizingUsage, "  prompt_sizing: usage", false},
		{record.SizingTokenizer, "  prompt_sizing: tokenizer\n  tokenizer: " + tok, true},
	} {
		t.Run(tt.method, func(t *testing.T) {
			t.Parallel()
			cfg := writeTestConfig(t, fmt.Sprintf(subwordSweepConfig, tt.keys))
			dir := filepath.Join(t.TempDir(), "run")
			r := runCmd(nil, "sweep", "-c", cfg, "-o", dir, "--input-tokens", "512")
			if r.err != nil {
				t.Fatalf("sweep: %v\n%s", r.err, r.stderr)
			}
			if n := strings.Count(r.stderr, "kneecap: prompt sizing: "+tt.method); n != 1 {
				t.Errorf("the sizing is printed %d times:\n%s", n, r.stderr)
			}
			res, err := rundir.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if sz := res.PromptSizing; sz == nil || sz.Method != tt.method || sz.Exact != tt.exact {
				t.Fatalf("levels.json prompt_sizing %+v", sz)
			}
			checkPromptP50(t, res)
			report, err := os.ReadFile(filepath.Join(dir, "report.md"))
			if err != nil || !strings.Contains(string(report), "prompts sized by "+tt.method) {
				t.Errorf("report.md does not say how the prompts were sized (%v)", err)
			}
		})
	}
}

// checkPromptP50 checks every level's p50 of usage.prompt_tokens: within ±2% of 512.
func checkPromptP50(t *testing.T, res *rundir.Run) {
	t.Helper()
	const want = 512
	for _, l := range res.Levels {
		var p []int
		for _, rec := range l.Records {
			if rec.OK() {
				p = append(p, rec.PromptTokens)
			}
		}
		if len(p) == 0 {
			t.Fatalf("level %d: no successful request", l.Run.Index)
		}
		slices.Sort(p)
		p50 := p[len(p)/2]
		t.Logf("concurrency %d: %d requests, prompt tokens p50 %d (%d … %d)", l.Run.Concurrency, len(p), p50, p[0], p[len(p)-1])
		off := float64(p50-want) / want
		if off < -0.02 || off > 0.02 {
			t.Errorf("concurrency %d: p50 %d tokens, %+.1f%% from %d", l.Run.Concurrency, p50, 100*off, want)
		}
	}
}
