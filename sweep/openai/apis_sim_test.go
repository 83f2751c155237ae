package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
)

// eventAPIs are the APIs whose streams are named events (protocol.events).
var eventAPIs = []record.API{record.APIResponses, record.APIMessages}

// TestSimulatorEventAPIs runs the Responses and Messages APIs against the simulator's fixed
// mode with reasoning_tokens 3 of 10: each record says what chat's says of the same request
// (N_out 10 from usage, the prompt's 5 tokens, 10 content chunks of which 3 reasoning, TTFT ≥
// cfg.TTFT, TTFA ≥ cfg.TTFT + 3·ITL, the answer "tok " × 7 kept), the model listing works,
// and the reasoning tokens come from the Responses usage (the Messages API reports none).
func TestSimulatorEventAPIs(t *testing.T) {
	const ttft, itl = 10 * time.Millisecond, time.Millisecond
	srv := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.ReasoningTokens = ttft, itl, 3 })
	for _, api := range append([]record.API{record.APIChat}, eventAPIs...) {
		c := newClient(t, srv.URL, func(o *Options) { o.API = api; o.Model = sim.DefaultModel })
		recs := make([]record.Record, 4)
		reqs := make([]record.Request, len(recs))
		var wg sync.WaitGroup
		for i := range recs {
			reqs[i] = record.Request{Prompt: "one two three four five", PromptTokens: 5, MaxTokens: 10, IgnoreEOS: true, KeepReply: true}
			wg.Go(func() { c.Do(context.Background(), &reqs[i], &recs[i]) })
		}
		wg.Wait()
		for i, rec := range recs {
			if rec.Status != record.StatusOK {
				t.Fatalf("%s %d: %s %s %s", api, i, rec.Status, rec.ErrorClass, rec.Error)
			}
			wantReasoning := 3
			if api == record.APIMessages {
				wantReasoning = 0
			}
			if rec.OutputTokens != 10 || rec.TokensSource != record.TokensFromUsage || rec.PromptTokens != 5 ||
				rec.ReasoningChunks != 3 || rec.ReasoningTokens != wantReasoning || rec.TokensNote != "" {
				t.Errorf("%s: out %d (%s) prompt %d, reasoning chunks %d tokens %d, note %q; want 10 usage 5, 3 %d",
					api, rec.OutputTokens, rec.TokensSource, rec.PromptTokens, rec.ReasoningChunks, rec.ReasoningTokens, rec.TokensNote, wantReasoning)
			}
			if len(rec.Chunks) != 10 || !slices.IsSorted(rec.Chunks) {
				t.Errorf("%s: %d chunks %v", api, len(rec.Chunks), rec.Chunks)
			}
			if rec.TTFT < ttft || rec.TTFA < ttft+3*itl || rec.E2E < ttft+9*itl {
				t.Errorf("%s: TTFT %v TTFA %v E2E %v below the simulator's floors", api, rec.TTFT, rec.TTFA, rec.E2E)
			}
			if want := strings.Repeat("tok ", 7); reqs[i].Reply != want {
				t.Errorf("%s: reply %q, want %q", api, reqs[i].Reply, want)
			}
		}
		ids, err := c.Models(context.Background())
		if err != nil || !slices.Contains(ids, sim.DefaultModel) {
			t.Errorf("%s: models %v %v", api, ids, err)
		}
	}
}

// TestSimulatorEventAPIFaults: the simulator's faults on the Responses and Messages APIs are
// classified as chat's: error_rate (the API's error event after a 200: response.failed with
// server_error, error with api_error) http_5xx, queue_limit_429 (a 429 in the API's envelope)
// http_429, disconnect_rate (the stream cut before its terminal event) stream_broken.
func TestSimulatorEventAPIFaults(t *testing.T) {
	for _, tt := range []struct {
		name  string
		mod   func(*sim.Config)
		class record.ErrorClass
		msg   string
	}{
		{"error_rate", func(c *sim.Config) { c.Faults.ErrorRate = 1 }, record.ErrHTTP5xx, "injected fault: internal server error"},
		{"disconnect_rate", func(c *sim.Config) { c.Faults.DisconnectRate = 1 }, record.ErrStreamBroken, "unexpected EOF"},
		{"queue_limit_429", func(c *sim.Config) { c.Faults.QueueLimit429, c.FixedSlots = 1, 1 }, record.ErrHTTP429, "waiting queue"},
	} {
		for _, api := range eventAPIs {
			t.Run(tt.name+"/"+string(api), func(t *testing.T) {
				srv := startSim(t, tt.mod)
				c := newClient(t, srv.URL, func(o *Options) { o.API = api; o.Model = sim.DefaultModel })
				req := record.Request{Prompt: "a b", PromptTokens: 2, MaxTokens: 20, IgnoreEOS: true}
				var rec record.Record
				if tt.name == "queue_limit_429" {
					// One request holds the one slot, the next ones wait for it: one that finds two
					// waiting is refused.
					recs := make([]record.Record, 6)
					var wg sync.WaitGroup
					for i := range recs {
						wg.Go(func() { r := req; c.Do(context.Background(), &r, &recs[i]) })
					}
					wg.Wait()
					i := slices.IndexFunc(recs, func(r record.Record) bool { return r.Status == record.StatusError })
					if i < 0 {
						t.Skip("the requests never queued together (a starved machine)")
					}
					rec = recs[i]
				} else {
					rec = do(t, c, req)
				}
				if rec.Status != record.StatusError || rec.ErrorClass != tt.class || !strings.Contains(rec.Error, tt.msg) {
					t.Fatalf("%s %q (%s), want %s naming %q", rec.Status, rec.ErrorClass, rec.Error, tt.class, tt.msg)
				}
			})
		}
	}
}

// TestEventAPIRequests: a Responses request carries the key as a bearer token; a Messages
// request carries it as x-api-key with anthropic-version 2023-06-01 and no Authorization
// (https://docs.anthropic.com/en/api/messages), on the stream and on GET /v1/models alike.
// Headers the user gives are sent as for chat. The bodies: Responses {model, input,
// max_output_tokens, stream, store false} with vLLM's ignore_eos and no min_tokens (its
// ResponsesRequest has none); Messages {model, max_tokens, messages, stream}, max_tokens the
// default when the workload sets none, and no ignore_eos or min_tokens (neither Anthropic's
// nor vLLM's AnthropicMessagesRequest has them).
func TestEventAPIRequests(t *testing.T) {
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT, cfg.ITL = time.Millisecond, 100*time.Microsecond
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]http.Header{}
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		mu.Lock()
		seen[r.Method+" "+r.URL.Path] = r.Header.Clone()
		if r.Method == http.MethodPost {
			bodies = append(bodies, string(b))
		}
		mu.Unlock()
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); s.Close() })
	for _, api := range eventAPIs {
		c := newClient(t, srv.URL, func(o *Options) {
			o.API, o.Model, o.APIKey = api, sim.DefaultModel, "sk-test-secret"
			o.Header = http.Header{"X-Team": {"a"}}
		})
		for _, req := range []record.Request{{Prompt: "a b", PromptTokens: 2, MaxTokens: 5, IgnoreEOS: true}, {Prompt: "a b", PromptTokens: 2}} {
			if rec := do(t, c, req); rec.Status != record.StatusOK {
				t.Fatalf("%s: %s %s %s", api, rec.Status, rec.ErrorClass, rec.Error)
			}
		}
		if _, err := c.Models(context.Background()); err != nil {
			t.Fatalf("%s: models: %v", api, err)
		}
		path := "POST /v1/responses"
		if api == record.APIMessages {
			path = "POST /v1/messages"
		}
		mu.Lock()
		for _, p := range []string{path, "GET /v1/models"} {
			h := seen[p]
			if h.Get("X-Team") != "a" {
				t.Errorf("%s %s: X-Team %q", api, p, h.Get("X-Team"))
			}
			if api == record.APIMessages {
				if h.Get("X-Api-Key") != "sk-test-secret" || h.Get("Anthropic-Version") != anthropicVersion || h.Get("Authorization") != "" {
					t.Errorf("%s %s: x-api-key %q anthropic-version %q authorization %q", api, p, h.Get("X-Api-Key"), h.Get("Anthropic-Version"), h.Get("Authorization"))
				}
			} else if h.Get("Authorization") != "Bearer sk-test-secret" || h.Get("X-Api-Key") != "" {
				t.Errorf("%s %s: authorization %q x-api-key %q", api, p, h.Get("Authorization"), h.Get("X-Api-Key"))
			}
		}
		mu.Unlock()
	}
	want := []string{
		`{"model":"M","input":"a b","max_output_tokens":5,"stream":true,"store":false,"ignore_eos":true}`,
		`{"model":"M","input":"a b","stream":true,"store":false}`,
		`{"model":"M","max_tokens":5,"messages":[{"role":"user","content":"a b"}],"stream":true}`,
		`{"model":"M","max_tokens":` + strconv.Itoa(defaultMessagesMaxTokens) + `,"messages":[{"role":"user","content":"a b"}],"stream":true}`,
	}
	for i := range want {
		want[i] = strings.Replace(want[i], `"M"`, strconv.Quote(sim.DefaultModel), 1)
	}
	if !slices.Equal(bodies, want) {
		t.Errorf("bodies\n%s\nwant\n%s", strings.Join(bodies, "\n"), strings.Join(want, "\n"))
	}
	if _, err := New(Options{BaseURL: srv.URL + "/v1", API: record.APIMessages, APIKey: "k", Header: http.Header{"x-api-key": {"hunter2"}}}); err == nil ||
		!strings.Contains(err.Error(), "X-Api-Key") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("an x-api-key header beside the key: %v", err)
	}
}
