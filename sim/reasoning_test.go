package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// reasoningTrace is what a client saw of a chat stream with reasoning: the tokens of each
// chunk, split by field, in order.
type reasoningTrace struct {
	reasoning, answer []int // per chunk with any token: reasoning_content and content tokens
	finish            string
	usage             *openai.Usage
}

func readReasoning(t *testing.T, url string, req openai.ChatCompletionRequest) reasoningTrace {
	t.Helper()
	st, err := newClient(url).CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var tr reasoningTrace
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return tr
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != nil {
			tr.usage = resp.Usage
		}
		if len(resp.Choices) == 0 {
			continue
		}
		d := resp.Choices[0].Delta
		r, a := countTokens(d.ReasoningContent), countTokens(d.Content)
		if strings.Contains(d.ReasoningContent, "tok") || strings.Contains(d.Content, "hmm") {
			t.Errorf("answer and reasoning text mixed up: %+v", d)
		}
		if r+a > 0 {
			tr.reasoning = append(tr.reasoning, r)
			tr.answer = append(tr.answer, a)
		}
		if f := resp.Choices[0].FinishReason; f != "" {
			tr.finish = string(f)
		}
	}
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}

// TestReasoningStream: the first min(N, output) tokens stream as delta.reasoning_content, the
// rest as content, chunked as without reasoning (a chunk across the boundary carries both);
// usage.completion_tokens counts both and completion_tokens_details.reasoning_tokens the
// reasoning ones.
func TestReasoningStream(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		reasoning, perChunk   int
		maxTokens             int
		wantReasoning, answer []int
	}{
		// One token a chunk: 3 reasoning chunks, then 4 answer chunks.
		{"boundary between chunks", 3, 1, 7, []int{1, 1, 1, 0, 0, 0, 0}, []int{0, 0, 0, 1, 1, 1, 1}},
		// First chunk 1 token, then 3: the second chunk holds 1 reasoning + 2 answer tokens.
		{"boundary inside a chunk", 2, 3, 8, []int{1, 1, 0, 0}, []int{0, 2, 3, 1}},
		// All of the output is reasoning: no content at all.
		{"all reasoning", 10, 1, 4, []int{1, 1, 1, 1}, []int{0, 0, 0, 0}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := newTestServer(t, Config{StepBase: time.Millisecond, ReasoningTokens: tc.reasoning, TokensPerChunk: tc.perChunk,
				Tokenizer: TokenizerSubword})
			tr := readReasoning(t, url, chatReq(tc.maxTokens, true))
			if fmt.Sprint(tr.reasoning) != fmt.Sprint(tc.wantReasoning) || fmt.Sprint(tr.answer) != fmt.Sprint(tc.answer) {
				t.Errorf("chunks: reasoning %v answer %v; want %v and %v", tr.reasoning, tr.answer, tc.wantReasoning, tc.answer)
			}
			r := min(tc.reasoning, tc.maxTokens)
			if tr.finish != "length" || tr.usage == nil || tr.usage.CompletionTokens != tc.maxTokens ||
				tr.usage.CompletionTokensDetails == nil || tr.usage.CompletionTokensDetails.ReasoningTokens != r {
				t.Errorf("finish %q usage %+v; want length, completion %d of which reasoning %d", tr.finish, tr.usage, tc.maxTokens, r)
			}
		})
	}
}

// TestReasoningPlainAndOff: a plain chat answer carries message.reasoning_content and the
// usage detail; completions have no reasoning; a lying completion count leaves the detail
// true; without reasoning_tokens the answers have neither field (as before).
func TestReasoningPlainAndOff(t *testing.T) {
	_, url := newTestServer(t, Config{StepBase: time.Millisecond, ReasoningTokens: 3, Faults: Faults{UsageCompletionTokens: ptr[int64](1e12)}})
	req := chatReq(7, false)
	req.StreamOptions = nil
	resp, err := newClient(url).CreateChatCompletion(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	m := resp.Choices[0].Message
	if m.ReasoningContent != strings.Repeat("hmm ", 3) || m.Content != strings.Repeat("tok ", 4) {
		t.Errorf("message reasoning %q content %q; want 3 reasoning and 4 answer tokens", m.ReasoningContent, m.Content)
	}
	if d := resp.Usage.CompletionTokensDetails; resp.Usage.CompletionTokens != 1e12 || d == nil || d.ReasoningTokens != 3 {
		t.Errorf("usage %+v (details %+v); want the lie 1e12 and the true 3 reasoning tokens", resp.Usage, d)
	}
	code, b := rawPost(t, url, "/v1/completions", `{"prompt":"a","max_tokens":5}`)
	if code != 200 || strings.Contains(string(b), "hmm") || strings.Contains(string(b), "completion_tokens_details") {
		t.Errorf("completions with reasoning_tokens: %d %s; want plain text and no reasoning detail", code, b)
	}

	_, url = newTestServer(t, Config{StepBase: time.Millisecond})
	msgs, _ := json.Marshal(req.Messages)
	for _, body := range []string{
		fmt.Sprintf(`{"messages":%s,"max_tokens":4}`, msgs),
		fmt.Sprintf(`{"messages":%s,"max_tokens":4,"stream":true,"stream_options":{"include_usage":true}}`, msgs),
	} {
		code, b := rawPost(t, url, "/v1/chat/completions", body)
		if code != 200 || strings.Contains(string(b), "reasoning") || strings.Contains(string(b), "completion_tokens_details") {
			t.Errorf("without reasoning_tokens: %d %s", code, b)
		}
	}
}
