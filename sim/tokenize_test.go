package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// tokenizeAnswer posts body to /tokenize and decodes vLLM's answer.
func tokenizeAnswer(t *testing.T, url, body string) (int, tokenizeResponse) {
	t.Helper()
	code, b := rawPost(t, url, "/tokenize", body)
	var tr tokenizeResponse
	if code == 200 {
		if err := json.Unmarshal(b, &tr); err != nil {
			t.Fatalf("/tokenize %s: %v: %s", body, err, b)
		}
		var keys map[string]json.RawMessage
		_ = json.Unmarshal(b, &keys)
		for _, k := range []string{"count", "max_model_len", "tokens"} {
			if _, ok := keys[k]; !ok {
				t.Errorf("/tokenize answer lacks %q: %s", k, b)
			}
		}
	}
	return code, tr
}

// TestSubwordPromptTokens: under the subword rule with a 40-token chat template, the usage of
// a chat request is Σ ⌈bytes ÷ 4⌉ over its words plus 40, a completion's has no template,
// and POST /tokenize counts both prompts exactly as usage.prompt_tokens does.
func TestSubwordPromptTokens(t *testing.T) {
	const template = 40
	_, url := newTestServer(t, Config{StepBase: time.Millisecond, Tokenizer: TokenizerSubword, ChatTemplateTokens: template,
		MaxModelLen: 1000})
	c := newClient(url)
	// chatReq's messages: "be brief" = 1 + ⌈5/4⌉ = 3; "one two three four" = 1 + 1 + 2 + 1 = 5.
	const wantChat = 3 + 5 + template
	tr, err := chatStream(context.Background(), c, chatReq(5, true))
	if err != nil {
		t.Fatal(err)
	}
	if tr.usage == nil || tr.usage.PromptTokens != wantChat || tr.usage.CompletionTokens != 5 {
		t.Fatalf("chat usage %+v, want prompt %d, completion 5", tr.usage, wantChat)
	}
	// Each output token's text counts one token under the rule: the word "tok" is 3 bytes.
	if tr.tokens != 5 {
		t.Errorf("content counts %d words, want 5", tr.tokens)
	}
	const prompt = "a bb ccccc dddddddd eeeeeeeee" // 1 + 1 + 2 + 2 + 3
	cr, err := c.CreateCompletion(context.Background(), openai.CompletionRequest{Model: DefaultModel, Prompt: prompt, MaxTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	if cr.Usage.PromptTokens != 9 || countSubwordTokens(cr.Choices[0].Text) != 4 {
		t.Errorf("completion usage %+v text %q, want prompt 9 and 4 tokens of text", cr.Usage, cr.Choices[0].Text)
	}

	msgs, _ := json.Marshal(chatReq(5, true).Messages)
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"chat", fmt.Sprintf(`{"model":%q,"messages":%s,"add_generation_prompt":true}`, DefaultModel, msgs), wantChat},
		{"chat without model", fmt.Sprintf(`{"messages":%s}`, msgs), wantChat},
		{"prompt", fmt.Sprintf(`{"model":%q,"prompt":%q}`, DefaultModel, prompt), 9},
		{"token ids", `{"prompt":[5,6,7]}`, 3},
		{"empty prompt", `{"prompt":""}`, 0},
	} {
		code, got := tokenizeAnswer(t, url, tc.body)
		if code != 200 || got.Count != tc.want || len(got.Tokens) != got.Count || got.MaxModelLen != 1000 {
			t.Errorf("%s: status %d, %+v; want count %d with as many ids, max_model_len 1000", tc.name, code, got, tc.want)
		}
	}
	_, a := tokenizeAnswer(t, url, fmt.Sprintf(`{"prompt":%q}`, prompt))
	_, b := tokenizeAnswer(t, url, fmt.Sprintf(`{"prompt":%q}`, prompt+" "+prompt))
	if !slices.Equal(b.Tokens, append(slices.Clone(a.Tokens), a.Tokens...)) {
		t.Errorf("ids are not a function of the text: %v then %v", a.Tokens, b.Tokens)
	}
	_, ids := tokenizeAnswer(t, url, `{"prompt":[5,6,7]}`)
	if !slices.Equal(ids.Tokens, []int{5, 6, 7}) {
		t.Errorf("token-id prompt tokenized as %v, want [5 6 7]", ids.Tokens)
	}
	for _, tc := range []struct {
		name, body string
		want       int
	}{
		{"unknown model", `{"model":"nope","prompt":"a"}`, 404},
		{"malformed", `{"prompt":`, 400},
		{"no prompt", `{"model":"kneecap-sim"}`, 400},
		{"empty messages", `{"messages":[]}`, 400},
	} {
		if code, _ := tokenizeAnswer(t, url, tc.body); code != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, code, tc.want)
		}
	}
}

// TestTokenCounter: under either rule, with and without a chat template, TokenCounter counts
// a text as the usage.prompt_tokens the simulator reports for a chat request whose one
// message is that text.
func TestTokenCounter(t *testing.T) {
	texts := []string{"one", "a bb ccccc dddddddd eeeeeeeee", " be  brief\t\nnow ", "ééé a\u00a0b\u3000c"}
	for _, tk := range tokenizers() {
		for _, template := range []int{0, 40} {
			_, url := newTestServer(t, Config{StepBase: time.Millisecond, Tokenizer: tk, ChatTemplateTokens: template})
			c, counter := newClient(url), TokenCounter{Tokenizer: tk, TemplateTokens: template}
			for _, text := range texts {
				r, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: DefaultModel, MaxTokens: 1,
					Messages: []openai.ChatCompletionMessage{{Role: "user", Content: text}}})
				if err != nil {
					t.Fatal(err)
				}
				got, err := counter.CountTokens(context.Background(), text)
				if err != nil || got != r.Usage.PromptTokens {
					t.Errorf("%s, template %d, %q: counted %d (%v), usage.prompt_tokens %d", tk, template, text, got, err, r.Usage.PromptTokens)
				}
			}
		}
	}
}

// TestWordsTokenize: the default rule counts words, with no template unless configured, and
// /tokenize agrees with usage; max_model_len is 0 when unlimited.
func TestWordsTokenize(t *testing.T) {
	_, url := newTestServer(t, Config{StepBase: time.Millisecond})
	msgs, _ := json.Marshal(chatReq(5, true).Messages)
	code, got := tokenizeAnswer(t, url, fmt.Sprintf(`{"messages":%s}`, msgs))
	if code != 200 || got.Count != 6 || got.MaxModelLen != 0 {
		t.Errorf("status %d %+v, want count 6 (the words usage reports, TestChatStreamDecodes), max_model_len 0", code, got)
	}
}

// TestSubwordLimitsAndKV: the context limit, the KV reservation and the prefill counter see
// the subword count, not the word count.
func TestSubwordLimitsAndKV(t *testing.T) {
	const kv = 1000
	srv, url := newTestServer(t, Config{StepBase: 2 * time.Millisecond, Tokenizer: TokenizerSubword, KVCacheTokens: kv,
		MaxModelLen: 100, OutputDist: outputFixed, OutputTokens: 1000})
	prompt := strings.Repeat("abcdefgh ", 30) // 30 words, 60 tokens
	for _, tc := range []struct {
		maxTokens, want int
	}{{40, 200}, {41, 400}} {
		code, body := rawPost(t, url, "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":%d}`, prompt, tc.maxTokens))
		if code != tc.want {
			t.Errorf("60-token prompt + max_tokens %d against max_model_len 100: status %d, want %d: %s", tc.maxTokens, code, tc.want, body)
		}
	}
	if st := srv.Stats(); st.PromptTokens != 60 {
		t.Errorf("prefilled %d prompt tokens, want 60", st.PromptTokens)
	}
	// Without preemption a running request reserves prompt + output tokens of KV.
	st, err := newClient(url).CreateCompletionStream(context.Background(), openai.CompletionRequest{
		Model: DefaultModel, Prompt: prompt, MaxTokens: 40, Stream: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Recv(); err != nil { // the first token: the request holds its KV
		t.Fatal(err)
	}
	if got := srv.Stats().KVTokensUsed; got != 60+40 {
		t.Errorf("KV in use %d, want 60 prompt + 40 output tokens", got)
	}
}

// TestSubwordPrefill: prefill works through the subword count. Chunked at 10 prompt tokens a
// step, a 30-word prompt of 8-byte words takes ⌈30 ÷ 10⌉ = 3 steps under the words rule and
// ⌈60 ÷ 10⌉ = 6 under the subword rule (the step that completes prefill yields the only token).
func TestSubwordPrefill(t *testing.T) {
	prompt := strings.Repeat("abcdefgh ", 30)
	for tk, want := range map[Tokenizer]int64{tokenizerWords: 3, TokenizerSubword: 6} {
		srv, url := newTestServer(t, Config{StepBase: time.Millisecond, Tokenizer: tk, MaxBatchedTokens: 10})
		if code, b := rawPost(t, url, "/v1/completions", fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, prompt)); code != 200 {
			t.Fatalf("%s: %d %s", tk, code, b)
		}
		if st := srv.Stats(); st.Steps != want {
			t.Errorf("%s: %d engine steps, want %d", tk, st.Steps, want)
		}
	}
}
