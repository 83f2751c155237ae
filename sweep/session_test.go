package sweep

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/workload"
)

// sessionsConfig is a synthetic sessions workload: turns uniform in [1, 5], user messages of
// 30 tokens, 12 output tokens a turn.
func sessionsConfig() workload.WorkloadConfig {
	return workload.WorkloadConfig{
		InputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 64}, OutputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 16},
		FixedOutput: true, Seed: 7, ThinkTime: 5 * time.Millisecond,
		Sessions: &workload.SessionsConfig{
			Turns: workload.Dist{Dist: workload.DistUniform, Min: 1, Max: 5}, ThinkTime: 40 * time.Millisecond,
			UserTokens: workload.Dist{Dist: workload.DistFixed, Mean: 30}, OutputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 12},
		},
	}
}

// TestSessionHistory drives a worker's session state as the runner does, the workload sized
// for the tests' server (a 40-token template): turn k's history is the earlier user messages
// and the replies the client kept, in order; its requested length is the overhead, the
// history's user tokens and reply tokens and its own message; records carry one session id
// per conversation and turns from 1; the turn think time passes within a conversation, the
// workload's after it; a failed turn ends its conversation.
func TestSessionHistory(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.Turns = workload.Dist{Dist: workload.DistFixed, Mean: 3}
	w, _ := sizeWorkload(t, cfg, serverSizing())
	src := w.(*workload.Sessions)
	s := newSession(w, 1, 2, &sessionCuts{})
	const think = 5 * time.Millisecond
	ids := map[string]bool{}
	for conv := range 2 {
		want := src.Conversation(1, 2, conv)
		var hist []record.Message
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
			hist = append(hist, record.Message{Role: workload.RoleUser, Content: want[k].Prompt}, record.Message{Role: workload.RoleAssistant, Content: req.Reply})
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

// TestSessionContextLimit: with max_model_len M a conversation ends before the turn whose
// requested prompt (template + history + message) and max_tokens would exceed M, the level
// note counting it; the history counts the replies' content, not their reasoning.
func TestSessionContextLimit(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Sessions.Turns = workload.Dist{Dist: workload.DistFixed, Mean: 5}
	w, _ := sizeWorkload(t, cfg, serverSizing()) // the template: 40 tokens
	// Turn k asks 40 + (k−1)·(30 + 12) + 30 + 12 = 40 + 42k: turn 3 166, turn 4 208.
	lim := workload.WithMaxModelLen(w, 200)
	if lim.(workload.Conversations).MaxModelLen() != 200 || workload.WithMaxModelLen(lim, 300).(workload.Conversations).MaxModelLen() != 200 {
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
	if warn := workload.ContextWarning(lim); !strings.Contains(warn, "reaches 250 tokens, more than max_model_len 200") {
		t.Errorf("warning %q", warn)
	}
	if warn := workload.ContextWarning(workload.WithMaxModelLen(w, 250)); warn != "" {
		t.Errorf("a fitting conversation warned %q", warn)
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
	cfg := workload.WorkloadConfig{Dataset: path, Seed: 1, Sessions: &workload.SessionsConfig{}}
	w, sz := sizeWorkload(t, cfg, serverSizing())
	if sz.Exact || sz.TokensPerWord != 2 || sz.OverheadTokens != templateTokens {
		t.Fatalf("sizing %+v: want not exact, 2 tokens a word, overhead 40", sz)
	}
	s := w.(*workload.Sessions)
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

// templateTokens is the chat template of the tests' server (simulator.chat_template_tokens).
const templateTokens = 40

// serverTokens counts as the tests' server does (simulator.tokenizer: subword,
// chat_template_tokens: templateTokens): the simulator's own count of a chat prompt.
var serverTokens = sim.TokenCounter{Tokenizer: sim.TokenizerSubword, TemplateTokens: templateTokens}

// serverSizing sizes prompts with the tests' server's tokenize endpoint (vLLM's messages
// form: its counts include the template).
func serverSizing() workload.SizingOptions {
	return workload.SizingOptions{Method: record.SizingTokenize, Endpoint: &workload.Counter{TokenCounter: serverTokens, Source: "fake", Templated: true}}
}

// sizeWorkload builds cfg's workload for the chat API and sizes its prompts by opts.
func sizeWorkload(t *testing.T, cfg workload.WorkloadConfig, opts workload.SizingOptions) (workload.Workload, record.PromptSizing) {
	t.Helper()
	w, err := workload.NewWorkload(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	opts.API = record.APIChat
	sw, sz, err := workload.SizePrompts(context.Background(), w, opts)
	if err != nil {
		t.Fatal(err)
	}
	return sw, sz
}

// TestSessionHistoryBound: without a known context limit a conversation still ends before a
// turn whose request would pass record.MaxTokens, so its history cannot outgrow memory; the
// note says which limit it was.
func TestSessionHistoryBound(t *testing.T) {
	t.Parallel()
	for m, want := range map[int]int{0: record.MaxTokens, 200: 200, 2 * record.MaxTokens: record.MaxTokens} {
		if got := historyLimit(m); got != want {
			t.Errorf("historyLimit(%d) = %d, want %d", m, got, want)
		}
	}
	cfg := sessionsConfig()
	cfg.Sessions.Turns = workload.Dist{Dist: workload.DistFixed, Mean: 5}
	w, err := workload.NewWorkload(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	cuts := &sessionCuts{}
	s := newSession(w, 0, 0, cuts)
	const think = 5 * time.Millisecond
	req := s.next()
	// A reply of record.MaxTokens − 30 tokens: turn 2 asks 30 + that + 30 + 12 > the limit.
	rec := record.Record{Status: record.StatusOK, OutputTokens: record.MaxTokens - 30, TokensSource: record.TokensFromUsage}
	if pause := s.ended(&req, &rec, think); pause != think || s.n != 0 {
		t.Errorf("pause %v, turns left %d: want the conversation ended", pause, s.n)
	}
	want := fmt.Sprintf("1 conversations ended at turn 2: history + max_tokens would exceed %d tokens, the most kneecap asks (no model's context holds more)", record.MaxTokens)
	if got := cuts.note(); got != want {
		t.Errorf("note %q, want %q", got, want)
	}
}
