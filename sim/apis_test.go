package sim

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// postJSON POSTs body to url+path and returns the response's status and body, the stream's
// events as "name data" lines (its event: and data: lines joined).
func postJSON(t *testing.T, url, path, body string) (int, []string) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var lines []string
	sc := bufio.NewScanner(resp.Body)
	name := ""
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "event: "):
			name = strings.TrimPrefix(l, "event: ")
		case strings.HasPrefix(l, "data: "):
			lines = append(lines, name+" "+strings.TrimPrefix(l, "data: "))
			name = ""
		case l != "":
			lines = append(lines, l)
		}
	}
	return resp.StatusCode, lines
}

// TestEventAPIStreams: POST /v1/responses and /v1/messages stream the chat engine's tokens as
// those APIs' named events, each event's data naming its own type as the event: line does, in
// the order of the references (https://platform.openai.com/docs/api-reference/responses-streaming,
// https://docs.anthropic.com/en/api/messages-streaming), with reasoning first (2 of 4 tokens),
// the usage of the 4 tokens and the prompt's (4 words + the template's 0 in the fixed profile),
// and the stop reason of a stream cut at its cap.
func TestEventAPIStreams(t *testing.T) {
	cfg, _ := Profile("fixed")
	cfg.TTFT, cfg.ITL, cfg.TokensPerChunk, cfg.ReasoningTokens = time.Millisecond, 100*time.Microsecond, 1, 2
	_, url := newTestServer(t, cfg)
	for _, tc := range []struct {
		path, body string
		types      []string
	}{
		{"/v1/responses", `{"model":"` + DefaultModel + `","input":"one two three four","max_output_tokens":4,"stream":true,"ignore_eos":true}`,
			[]string{"response.created", "response.in_progress", "response.reasoning_text.delta", "response.reasoning_text.delta",
				"response.output_text.delta", "response.output_text.delta", "response.incomplete"}},
		{"/v1/messages", `{"model":"` + DefaultModel + `","max_tokens":4,"messages":[{"role":"user","content":"one two three four"}],"stream":true}`,
			[]string{"message_start", "ping", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop",
				"content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}},
	} {
		status, events := postJSON(t, url, tc.path, tc.body)
		if status != http.StatusOK || len(events) != len(tc.types) {
			t.Fatalf("%s: %d, %d events %q", tc.path, status, len(events), events)
		}
		for i, ev := range events {
			name, data, _ := strings.Cut(ev, " ")
			var v struct {
				Type     string `json:"type"`
				Response struct {
					Usage map[string]any `json:"usage"`
				} `json:"response"`
				Usage map[string]any  `json:"usage"`
				Delta json.RawMessage `json:"delta"`
			}
			if err := json.Unmarshal([]byte(data), &v); err != nil || v.Type != name || name != tc.types[i] {
				t.Fatalf("%s: event %d %q: type %q (%v), want %s", tc.path, i, ev, v.Type, err, tc.types[i])
			}
			switch name {
			case "response.incomplete":
				if u := v.Response.Usage; u["input_tokens"] != 4.0 || u["output_tokens"] != 4.0 ||
					u["output_tokens_details"].(map[string]any)["reasoning_tokens"] != 2.0 {
					t.Errorf("responses usage %v", u)
				}
			case "message_delta":
				if v.Usage["output_tokens"] != 4.0 || !strings.Contains(string(v.Delta), `"stop_reason":"max_tokens"`) {
					t.Errorf("message_delta %s", data)
				}
			}
		}
	}
}

// TestEventAPIRequests: the Messages API requires max_tokens (Anthropic's 400 in its error
// envelope), both APIs are served streamed only, and a Responses input may be a list of
// messages.
func TestEventAPIRequests(t *testing.T) {
	cfg, _ := Profile("fixed")
	cfg.TTFT, cfg.ITL = time.Millisecond, 100*time.Microsecond
	_, url := newTestServer(t, cfg)
	status, body := postJSON(t, url, "/v1/messages", `{"model":"`+DefaultModel+`","messages":[{"role":"user","content":"a"}],"stream":true}`)
	if status != http.StatusBadRequest || len(body) != 1 || !strings.Contains(body[0], `"type":"invalid_request_error"`) ||
		!strings.Contains(body[0], "max_tokens") {
		t.Errorf("messages without max_tokens: %d %q", status, body)
	}
	status, body = postJSON(t, url, "/v1/responses", `{"model":"`+DefaultModel+`","input":"a"}`)
	if status != http.StatusBadRequest || len(body) != 1 || !strings.Contains(body[0], "stream") {
		t.Errorf("responses without stream: %d %q", status, body)
	}
	status, body = postJSON(t, url, "/v1/responses", `{"model":"`+DefaultModel+`","input":[{"role":"user","content":"a"},{"role":"assistant","content":"b"},{"role":"user","content":"c"}],"max_output_tokens":2,"stream":true}`)
	if status != http.StatusOK || !strings.Contains(body[len(body)-1], `"input_tokens":3`) {
		t.Errorf("responses with a list input: %d %q", status, body)
	}
}
