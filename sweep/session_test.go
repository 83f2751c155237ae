package sweep

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

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

// TestSessionsConversations: conversations are deterministic in (seed, level, worker,
// conversation), their turns follow the turns distribution (uniform 1…5: mean 3), every user
// message has user_tokens words and is unique, and each turn asks for output_tokens.
func TestSessionsConversations(t *testing.T) {
	w, err := NewWorkload(sessionsConfig(), APIChat)
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

// TestSessionHistory drives a worker's session state as the runner does: turn k's history is
// the earlier user messages and the replies the client kept, in order; its requested length
// is the overhead, the history's user tokens and reply tokens and its own message; records
// carry one session id per conversation and turns from 1; the turn think time passes within
// a conversation, the workload's after it; a failed turn ends its conversation.
func TestSessionHistory(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.Turns = Dist{Dist: DistFixed, Mean: 3}
	w, err := NewWorkload(cfg, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	src := w.(*Sessions)
	src.overhead = 40 // as a sizing would set it
	s := newSession(w, 1, 2, &sessionCuts{})
	const think = 5 * time.Millisecond
	ids := map[string]bool{}
	for conv := range 2 {
		want := src.Conversation(1, 2, conv)
		var hist []Message
		for k := range 3 {
			req := s.next()
			if s.id != "1.2."+string(rune('0'+conv)) || s.turn != k {
				t.Fatalf("conversation %d turn %d: session %q turn index %d", conv, k+1, s.id, s.turn)
			}
			ids[s.id] = true
			if req.Prompt != want[k].Prompt || req.KeepReply != (k < 2) {
				t.Fatalf("turn %d: prompt or KeepReply (%v: only when a turn follows) wrong", k+1, req.KeepReply)
			}
			if !reflect.DeepEqual(req.History, hist) && !(len(hist) == 0 && len(req.History) == 0) {
				t.Fatalf("turn %d history %v, want %v", k+1, req.History, hist)
			}
			// Requested: 40 + k × (30 user + 12 reply) + 30.
			if wantTok := 40 + k*(30+12) + 30; req.PromptTokens != wantTok {
				t.Errorf("turn %d PromptTokens %d, want %d", k+1, req.PromptTokens, wantTok)
			}
			req.Reply = strings.Repeat("tok ", 12) + string(rune('a'+k))
			rec := record.Record{Status: record.StatusOK, OutputTokens: 12}
			pause := s.ended(&req, &rec, think)
			if wantPause := map[bool]time.Duration{true: think, false: 40 * time.Millisecond}[k == 2]; pause != wantPause {
				t.Errorf("turn %d: pause %v, want %v", k+1, pause, wantPause)
			}
			hist = append(hist, Message{RoleUser, want[k].Prompt}, Message{RoleAssistant, req.Reply})
		}
	}
	if len(ids) != 2 {
		t.Errorf("session ids %v: want one per conversation", ids)
	}
	// A failed turn 1 ends conversation 2: the next request is turn 1 of conversation 3.
	req := s.next()
	if pause := s.ended(&req, &record.Record{Status: record.StatusError}, think); pause != think {
		t.Errorf("pause after a failed turn %v, want the workload's think time", pause)
	}
	if req = s.next(); s.id != "1.2.3" || s.turn != 0 || len(req.History) != 0 {
		t.Errorf("after a failure: session %s turn index %d, %d history messages", s.id, s.turn, len(req.History))
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
	if _, err := NewWorkload(sessionsConfig(), APICompletions); err == nil || !strings.Contains(err.Error(), "target.api chat") {
		t.Errorf("completions: %v", err)
	}
}

// TestSessionsSized: sized in the server's tokens (the subword rule, a 40-token template
// counted by a templated counter), every user message counts exactly its drawn user_tokens
// without the template, Overhead is the template, and a turn's requested length adds them.
func TestSessionsSized(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.UserTokens = Dist{Dist: DistUniform, Min: 1, Max: 600}
	c := &subwordCounter{template: templateTokens}
	w, sz := size(t, cfg, SizingOptions{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: c, Source: "fake", Templated: true}})
	s := w.(*Sessions)
	if !sz.Exact || s.Overhead() != templateTokens || s.sized == nil {
		t.Fatalf("sizing %+v, overhead %d", sz, s.Overhead())
	}
	for conv := range 200 {
		for k, tr := range s.Conversation(0, conv%3, conv) {
			u := s.user.draw(turnRand(cfg.Seed, 0, conv%3, conv, k+1))
			if got := subword(tr.Prompt); got != u || tr.PromptTokens != u {
				t.Fatalf("conversation %d turn %d: drawn %d, PromptTokens %d, the server counts %d", conv, k+1, u, tr.PromptTokens, got)
			}
		}
	}
	if r := s.Next(0, 0, 0); r.PromptTokens != templateTokens+subword(r.Prompt) {
		t.Errorf("Next: PromptTokens %d, server %d", r.PromptTokens, templateTokens+subword(r.Prompt))
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
	w, err := NewWorkload(cfg, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	got := w.(*Sessions).Conversation(0, 0, 0)
	want := []Request{
		{Prompt: "one two three", PromptTokens: 3, MaxTokens: 4},
		{Prompt: "four five", PromptTokens: 2, MaxTokens: 2},
		{Prompt: "six", PromptTokens: 1, MaxTokens: 6},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("turns %+v, want %+v", got, want)
	}
	// Without sessions the same entry is one request, as before.
	cfg.Sessions = nil
	d, err := NewWorkload(cfg, APIChat)
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
	w, err := NewWorkload(ds, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := MeanThink(ds, w), 20*time.Millisecond; got != want {
		t.Errorf("dataset MeanThink %v, want %v", got, want)
	}
}

// TestSessionContextLimit: with max_model_len M a conversation ends before the turn whose
// requested prompt (template + history + message) and max_tokens would exceed M, the level
// note counting it; the history counts the replies' content, not their reasoning.
func TestSessionContextLimit(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.Turns = Dist{Dist: DistFixed, Mean: 5}
	w, err := NewWorkload(cfg, APIChat)
	if err != nil {
		t.Fatal(err)
	}
	src := w.(*Sessions)
	src.overhead = 40
	// Turn k asks 40 + (k−1)·(30 + 12) + 30 + 12 = 40 + 42k: turn 3 166, turn 4 208.
	lim := WithMaxModelLen(w, 200)
	if lim.(Conversations).MaxModelLen() != 200 || WithMaxModelLen(lim, 300).(Conversations).MaxModelLen() != 200 {
		t.Fatal("WithMaxModelLen: want 200, kept over a later one")
	}
	cuts := &sessionCuts{}
	s := newSession(lim, 0, 0, cuts)
	const think = 5 * time.Millisecond
	for conv := range 2 {
		for k := range 3 {
			req := s.next()
			if s.turn != k || s.conv != conv {
				t.Fatalf("conversation %d turn index %d, want %d %d", s.conv, s.turn, conv, k)
			}
			// 20 output tokens of which 8 reasoning: 12 in the history.
			rec := record.Record{Status: record.StatusOK, OutputTokens: 20, ReasoningTokens: 8, TokensSource: record.TokensFromUsage}
			pause := s.ended(&req, &rec, think)
			if want := map[bool]time.Duration{true: think, false: 40 * time.Millisecond}[k == 2]; pause != want {
				t.Errorf("turn %d: pause %v, want %v", k+1, pause, want)
			}
		}
	}
	want := "2 conversations ended at turn 4: history + max_tokens would exceed max_model_len 200"
	if got := cuts.note(); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
	if got := replyTokens(&record.Record{OutputTokens: 9, ReasoningChunks: 4, ReasoningTokens: 1, TokensSource: record.TokensFromChunks}); got != 5 {
		t.Errorf("reply tokens from chunks %d, want 5", got)
	}
	// The nominal conversation, 40 + 5·(30 + 12) = 250 tokens, does not fit 200.
	if warn := ContextWarning(lim); !strings.Contains(warn, "reaches 250 tokens, more than max_model_len 200") {
		t.Errorf("warning %q", warn)
	}
	if warn := ContextWarning(WithMaxModelLen(w, 250)); warn != "" {
		t.Errorf("a fitting conversation warned %q", warn)
	}
}

// TestSessionBytes: a worker's conversation costs twice its nominal last-turn history, 3
// turns of 30 user and 12 output tokens: 2 × (3·30 + 2·12) × 8 bytes; nothing without
// sessions.
func TestSessionBytes(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.Turns = Dist{Dist: DistFixed, Mean: 3}
	if got, want := cfg.SessionBytes(), uint64(2*(3*30+2*12)*HistoryBytesPerToken); got != want {
		t.Errorf("SessionBytes %d, want %d", got, want)
	}
	cfg.Sessions = nil
	if got := cfg.SessionBytes(); got != 0 {
		t.Errorf("without sessions: %d", got)
	}
}

// TestSessionsDatasetSized: a dataset sized in the server's tokens and replayed as sessions
// is not exact (turns are sized by the fit's slope), and a prompt entry's single turn counts
// its words by the slope, the template once (Overhead): the subword rule of 8-letter words
// gives 2 tokens a word and a template of 40, so "abcdefgh abcdefgh abcdefgh" asks 40 + 6.
func TestSessionsDatasetSized(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.jsonl")
	data := `{"prompt":"abcdefgh abcdefgh abcdefgh","max_tokens":3}` + "\n" + `{"prompt":"abcdefgh","max_tokens":3}` + "\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := WorkloadConfig{Dataset: path, Seed: 1, Sessions: &SessionsConfig{}}
	c := &subwordCounter{template: templateTokens}
	w, sz := size(t, cfg, SizingOptions{Method: record.SizingTokenize, Endpoint: &Counter{TokenCounter: c, Source: "fake", Templated: true}})
	if sz.Exact || sz.TokensPerWord != 2 || sz.OverheadTokens != templateTokens {
		t.Fatalf("sizing %+v: want not exact, 2 tokens a word, overhead 40", sz)
	}
	s := w.(*Sessions)
	for conv := range 8 {
		turn := s.Turn(0, 0, conv, 0)
		if want := 2 * len(strings.Fields(turn.Prompt)); turn.PromptTokens != want {
			t.Fatalf("%q: PromptTokens %d, want %d (the slope alone)", turn.Prompt, turn.PromptTokens, want)
		}
	}
	sess := newSession(w, 0, 0, &sessionCuts{})
	for range 4 {
		req := sess.next()
		if want := templateTokens + 2*len(strings.Fields(req.Prompt)); req.PromptTokens != want {
			t.Errorf("%q asks %d tokens, want %d (the template once)", req.Prompt, req.PromptTokens, want)
		}
		sess.ended(&req, &record.Record{Status: record.StatusOK, OutputTokens: 3}, 0)
	}
}
