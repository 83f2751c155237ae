package workload

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestSessionsConversations: conversations are deterministic in (seed, level, worker,
// conversation), their turns follow the turns distribution (uniform 1…5: mean 3), every user
// message has user_tokens words and is unique, and each turn asks for output_tokens.
func TestSessionsConversations(t *testing.T) {
	w, err := NewWorkload(sessionsConfig(), record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	s := w.(*Sessions)
	seen := map[string]bool{}
	counts := map[int]int{}
	total := 0
	const convs = 400
	for c := range convs {
		turns := s.Conversation(2, c%4, c)
		if again := s.Conversation(2, c%4, c); !reflect.DeepEqual(turns, again) {
			t.Fatalf("conversation %d is not deterministic", c)
		}
		counts[len(turns)]++
		total += len(turns)
		for _, tr := range turns {
			if n := len(strings.Fields(tr.Prompt)); n != 30 || tr.PromptTokens != 30 {
				t.Fatalf("user message of %d words, PromptTokens %d: want 30", n, tr.PromptTokens)
			}
			if tr.MaxTokens != 12 || !tr.IgnoreEOS {
				t.Fatalf("turn max_tokens %d ignore_eos %v: want 12, true", tr.MaxTokens, tr.IgnoreEOS)
			}
			if seen[tr.Prompt] {
				t.Fatalf("user message repeated: %q", tr.Prompt[:20])
			}
			seen[tr.Prompt] = true
		}
	}
	for n := 1; n <= 5; n++ {
		// 400 draws of 5 equally likely values: 80 each, binomial sd ≈ 8; ±4 sd.
		if counts[n] < 48 || counts[n] > 112 {
			t.Errorf("%d conversations of %d turns out of %d: want about 80", counts[n], n, convs)
		}
	}
	if len(counts) != 5 {
		t.Errorf("turn counts %v: want 1…5 only", counts)
	}
	if mean := float64(total) / convs; mean < 2.8 || mean > 3.2 {
		t.Errorf("mean turns %.2f: want 3 ± 0.2", mean)
	}
}

// TestSessionsValidate: sessions need turns; with a dataset they take only think_time; the
// completions API is refused.
func TestSessionsValidate(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.Turns = Dist{}
	if errs := cfg.Validate(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "workload.sessions.turns: missing") {
		t.Errorf("no turns: %v", errs)
	}
	cfg = sessionsConfig()
	cfg.Dataset = "x.jsonl"
	if errs := cfg.Validate(); len(errs) != 3 || !strings.Contains(errs[0].Error(), "workload.dataset gives the conversations") {
		t.Errorf("dataset with turns, user_tokens, output_tokens: %v", errs)
	}
	if _, err := NewWorkload(sessionsConfig(), record.APICompletions); err == nil || !strings.Contains(err.Error(), "target.api chat") {
		t.Errorf("completions: %v", err)
	}
}

// TestSessionsSized: sized in the server's tokens (the subword rule, a 40-token template
// counted by a templated counter), every user message counts exactly its drawn user_tokens
// without the template, Overhead is the template, and a turn's requested length adds them.
func TestSessionsSized(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.UserTokens = Dist{Dist: DistUniform, Min: 1, Max: 600}
	w, sz := size(t, cfg, SizingOptions{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: serverTokens, Source: "fake", Templated: true}})
	s := w.(*Sessions)
	if !sz.Exact || s.Overhead() != templateTokens || s.sized == nil {
		t.Fatalf("sizing %+v, overhead %d", sz, s.Overhead())
	}
	for conv := range 200 {
		for k, tr := range s.Conversation(0, conv%3, conv) {
			u := s.user.Draw(turnRand(cfg.Seed, 0, conv%3, conv, k+1))
			if got := ruleTokens.Count(tr.Prompt); got != u || tr.PromptTokens != u {
				t.Fatalf("conversation %d turn %d: drawn %d, PromptTokens %d, the server counts %d", conv, k+1, u, tr.PromptTokens, got)
			}
		}
	}
	if r := s.Next(0, 0, 0); r.PromptTokens != serverTokens.Count(r.Prompt) {
		t.Errorf("Next: PromptTokens %d, server %d", r.PromptTokens, serverTokens.Count(r.Prompt))
	}
	// Message heads stay unique past 2¹¹ conversations (the bound of the prompts' seq
	// packing): 2¹⁸ conversations of 1024 turns per worker and level.
	heads := map[uint64]bool{}
	for _, conv := range []int{0, 1, 2047, 2048, 4096, 1<<18 - 1} {
		for _, turn := range []int{0, 1, 1023} {
			for worker := range 3 {
				h := s.sized.messageHead(4, worker, conv, turn)
				if heads[h] {
					t.Fatalf("message head of worker %d conversation %d turn %d repeats", worker, conv, turn)
				}
				heads[h] = true
			}
		}
	}
}

// TestSessionsDataset: with workload.sessions a ShareGPT conversation replays every user
// turn, each with the word length of the dataset's reply after it as its output length; an
// entry with one turn is a conversation of one turn.
func TestSessionsDataset(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	data := `{"conversations":[{"from":"human","value":"one two three"},{"from":"gpt","value":"a b c d"},{"from":"human","value":"four five"},{"from":"gpt","value":"e f"},{"from":"human","value":"six"},{"from":"gpt","value":"g h i j k l"}]}` + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := WorkloadConfig{Dataset: path, Seed: 1, Sessions: &SessionsConfig{ThinkTime: time.Millisecond}}
	w, err := NewWorkload(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	got := w.(*Sessions).Conversation(0, 0, 0)
	want := []record.Request{
		{Prompt: "one two three", PromptTokens: 3, MaxTokens: 4},
		{Prompt: "four five", PromptTokens: 2, MaxTokens: 2},
		{Prompt: "six", PromptTokens: 1, MaxTokens: 6},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("turns %+v, want %+v", got, want)
	}
	// Without sessions the same entry is one request, as before.
	cfg.Sessions = nil
	d, err := NewWorkload(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	if r := d.Next(0, 0, 0); r.Prompt != "one two three" || r.MaxTokens != 4 {
		t.Errorf("single-turn replay %+v", r)
	}
}

// TestMeanThink: 3 turns with 40 ms between turns and 5 ms after a conversation pause
// (2 × 40 + 5) ÷ 3 ms a request on average; without sessions, think_time.
func TestMeanThink(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.Turns = Dist{Dist: DistFixed, Mean: 3}
	if got, want := cfg.MeanThink(), (2*40*time.Millisecond+5*time.Millisecond)/3; got != want {
		t.Errorf("MeanThink %v, want %v", got, want)
	}
	cfg.Sessions = nil
	if got := cfg.MeanThink(); got != 5*time.Millisecond {
		t.Errorf("without sessions: %v", got)
	}
	// A dataset of a 3-turn and a 1-turn conversation: 2 turns on average, one pause of
	// sessions.think_time and one of think_time a conversation.
	path := filepath.Join(t.TempDir(), "chat.jsonl")
	data := `{"conversations":[{"from":"human","value":"a"},{"from":"gpt","value":"b"},{"from":"human","value":"c"},{"from":"gpt","value":"d"},{"from":"human","value":"e"},{"from":"gpt","value":"f"}]}` + "\n" +
		`{"prompt":"g h","max_tokens":3}` + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	ds := WorkloadConfig{Dataset: path, ThinkTime: 10 * time.Millisecond, Sessions: &SessionsConfig{ThinkTime: 30 * time.Millisecond}}
	w, err := NewWorkload(ds, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := MeanThink(ds, w), 20*time.Millisecond; got != want {
		t.Errorf("dataset MeanThink %v, want %v", got, want)
	}
}

// TestSessionBytes: a worker's conversation costs twice its nominal last-turn history, 3
// turns of 30 user and 12 output tokens: 2 × (3·30 + 2·12) × 8 bytes; nothing without
// sessions.
func TestSessionBytes(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.Turns = Dist{Dist: DistFixed, Mean: 3}
	if got, want := cfg.SessionBytes(), uint64(2*(3*30+2*12)*historyBytesPerToken); got != want {
		t.Errorf("SessionBytes %d, want %d", got, want)
	}
	cfg.Sessions = nil
	if got := cfg.SessionBytes(); got != 0 {
		t.Errorf("without sessions: %d", got)
	}
}

// sessionsConfig is a synthetic sessions workload in words: turns uniform in [1, 5], user
// messages of 30 words, 12 output tokens a turn.
func sessionsConfig() WorkloadConfig {
	return WorkloadConfig{
		InputTokens: Dist{Dist: DistFixed, Mean: 64}, OutputTokens: Dist{Dist: DistFixed, Mean: 16},
		FixedOutput: true, Seed: 7, ThinkTime: 5 * time.Millisecond,
		Sessions: &SessionsConfig{
			Turns: Dist{Dist: DistUniform, Min: 1, Max: 5}, ThinkTime: 40 * time.Millisecond,
			UserTokens: Dist{Dist: DistFixed, Mean: 30}, OutputTokens: Dist{Dist: DistFixed, Mean: 12},
		},
	}
}
