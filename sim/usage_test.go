package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestUsageFaults: usage_prompt_tokens and usage_completion_tokens replace the counts usage
// reports (total = their sum) in streams and plain answers of both APIs, omit_usage reports
// none, and the content stays true: 7 tokens streamed and returned whatever usage says.
func TestUsageFaults(t *testing.T) {
	const out, prompt = 7, 6 // chatReq's two messages count 6 words
	for _, tc := range []struct {
		name               string
		faults             Faults
		wantPrompt, wantCo int64
		omitted            bool
	}{
		{"truth", Faults{}, prompt, out, false},
		{"completion 0", Faults{UsageCompletionTokens: ptr[int64](0)}, prompt, 0, false},
		{"completion 1e12", Faults{UsageCompletionTokens: ptr[int64](1e12)}, prompt, 1e12, false},
		{"completion negative", Faults{UsageCompletionTokens: ptr[int64](-3)}, prompt, -3, false},
		{"prompt 1e15", Faults{UsagePromptTokens: ptr[int64](1e15)}, 1e15, out, false},
		{"both", Faults{UsagePromptTokens: ptr[int64](1), UsageCompletionTokens: ptr[int64](2)}, 1, 2, false},
		{"omitted", Faults{OmitUsage: true}, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := newTestServer(t, Config{StepBase: time.Millisecond, Faults: tc.faults})
			tr, err := chatStream(context.Background(), newClient(url), chatReq(out, true))
			if err != nil {
				t.Fatal(err)
			}
			if tr.tokens != out || tr.finish != "length" {
				t.Errorf("stream content %d tokens finish %q, want the true %d, length", tr.tokens, tr.finish, out)
			}
			switch {
			case tc.omitted && tr.usage != nil:
				t.Errorf("stream reported usage %+v with omit_usage", tr.usage)
			case !tc.omitted && (tr.usage == nil || int64(tr.usage.PromptTokens) != tc.wantPrompt ||
				int64(tr.usage.CompletionTokens) != tc.wantCo || int64(tr.usage.TotalTokens) != tc.wantPrompt+tc.wantCo):
				t.Errorf("stream usage %+v, want prompt %d completion %d total %d", tr.usage, tc.wantPrompt, tc.wantCo, tc.wantPrompt+tc.wantCo)
			}
			msgs, _ := json.Marshal(chatReq(out, false).Messages)
			for path, body := range map[string]string{
				"/v1/chat/completions": fmt.Sprintf(`{"messages":%s,"max_tokens":%d}`, msgs, out),
				"/v1/completions":      fmt.Sprintf(`{"prompt":"be brief one two three four","max_tokens":%d}`, out),
			} {
				code, b := rawPost(t, url, path, body)
				var ans struct {
					Choices []struct {
						Text    string `json:"text"`
						Message struct {
							Content string `json:"content"`
						} `json:"message"`
					} `json:"choices"`
					Usage *usageOut `json:"usage"`
				}
				if err := json.Unmarshal(b, &ans); err != nil || code != 200 || len(ans.Choices) != 1 {
					t.Fatalf("%s: %d %v %s", path, code, err, b)
				}
				if got := countTokens(ans.Choices[0].Text + ans.Choices[0].Message.Content); got != out {
					t.Errorf("%s: content %d tokens, want the true %d", path, got, out)
				}
				want := &usageOut{PromptTokens: tc.wantPrompt, CompletionTokens: tc.wantCo, TotalTokens: tc.wantPrompt + tc.wantCo}
				switch {
				case tc.omitted && strings.Contains(string(b), `"usage"`):
					t.Errorf("%s: usage in the answer with omit_usage: %s", path, b)
				case !tc.omitted && (ans.Usage == nil || *ans.Usage != *want):
					t.Errorf("%s: usage %+v, want %+v", path, ans.Usage, want)
				}
			}
		})
	}
}

// TestUsageFaultsConfig: the fault keys overlay the profile without aliasing the caller's
// values, name themselves in the banner, and omit_usage with a usage value is a problem.
func TestUsageFaultsConfig(t *testing.T) {
	in := Config{Faults: Faults{UsageCompletionTokens: ptr[int64](1e12), UsagePromptTokens: ptr[int64](0)}}
	c, err := Resolve(in)
	if err != nil {
		t.Fatal(err)
	}
	*in.Faults.UsageCompletionTokens = 5
	if *c.Faults.UsageCompletionTokens != 1e12 || *c.Faults.UsagePromptTokens != 0 {
		t.Errorf("resolved usage faults %d, %d; want 1e12, 0 (the caller's values at Resolve)", *c.Faults.UsageCompletionTokens, *c.Faults.UsagePromptTokens)
	}
	if s := c.String(); !strings.Contains(s, "faults={usage_prompt_tokens=0 usage_completion_tokens=1000000000000}") {
		t.Errorf("String() = %q, want the usage faults named", s)
	}
	if s := (Config{}).faultString(); s != "" {
		t.Errorf("no faults: %q", s)
	}
	_, err = Resolve(Config{Faults: Faults{OmitUsage: true, UsagePromptTokens: ptr[int64](3)}})
	if err == nil || !strings.Contains(err.Error(), "sim: faults.omit_usage:") {
		t.Errorf("omit_usage with usage_prompt_tokens: %v, want a faults.omit_usage problem", err)
	}
	if c, err := Resolve(Config{Faults: Faults{OmitUsage: true}}); err != nil || !strings.Contains(c.String(), "faults={omit_usage}") {
		t.Errorf("omit_usage: %v, %q", err, c.String())
	}
}

// TestMinTokens: min_tokens raises a shorter natural length (finish "stop"), is capped by
// max_tokens (finish "length"), and a negative one is a 400.
func TestMinTokens(t *testing.T) {
	_, url := newTestServer(t, Config{StepBase: time.Millisecond, OutputDist: outputFixed, OutputTokens: 5})
	for _, tc := range []struct {
		body, finish string
		want         int64
	}{
		{`"max_tokens":50`, "stop", 5},
		{`"max_tokens":50,"min_tokens":20`, "stop", 20},
		{`"max_tokens":10,"min_tokens":10`, "length", 10},
		{`"max_tokens":10,"min_tokens":30`, "length", 10},
		{`"min_tokens":3`, "stop", 5},
	} {
		code, b := rawPost(t, url, "/v1/completions", `{"prompt":"a",`+tc.body+`}`)
		var ans struct {
			Choices []struct {
				Text         string `json:"text"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage usageOut `json:"usage"`
		}
		if err := json.Unmarshal(b, &ans); err != nil || code != 200 || len(ans.Choices) != 1 {
			t.Fatalf("%s: %d %v %s", tc.body, code, err, b)
		}
		if c := ans.Choices[0]; ans.Usage.CompletionTokens != tc.want || int64(countTokens(c.Text)) != tc.want || c.FinishReason != tc.finish {
			t.Errorf("%s: %d tokens (text %d) finish %q; want %d, %q", tc.body, ans.Usage.CompletionTokens, countTokens(c.Text), c.FinishReason, tc.want, tc.finish)
		}
	}
	if code, _ := rawPost(t, url, "/v1/completions", `{"prompt":"a","min_tokens":-1}`); code != 400 {
		t.Errorf("min_tokens -1: status %d, want 400", code)
	}
}
