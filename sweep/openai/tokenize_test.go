package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// engineTemplate is the chat template of the fake engines, in tokens; a word is a token.
const engineTemplate = 40

// tokenizeEngine answers POST /tokenize as one engine does (shapes from each engine's docs and
// source: vLLM's TokenizeCompletionRequest/TokenizeChatRequest, SGLang's prompt form,
// llama.cpp's {"content"} → {"tokens"}, TGI's {"inputs"} → a list of tokens), counting one
// token a word (plus the template for vLLM's messages form); anything else is refused as the
// engine would. hits counts the requests.
func tokenizeEngine(t *testing.T, engine string, hits *atomic.Int64) *httptest.Server {
	t.Helper()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if r.URL.Path != "/tokenize" || r.Method != http.MethodPost || engine == "none" {
			http.NotFound(w, r)
			return
		}
		if engine == "keyed" && r.Header.Get("Authorization") != "Bearer sk-test" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var body struct {
			Prompt   *string `json:"prompt"`
			Content  *string `json:"content"`
			Inputs   *string `json:"inputs"`
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ids := func(text string, extra int) []int {
			out := make([]int, len(strings.Fields(text))+extra)
			for i := range out {
				out[i] = i + 1
			}
			return out
		}
		switch {
		case (engine == "vllm" || engine == "keyed") && body.Messages != nil:
			toks := ids(body.Messages[0].Content, engineTemplate)
			fmt.Fprintf(w, `{"count": %d, "max_model_len": 4096, "tokens": %s}`, len(toks), mustJSON(toks))
		case (engine == "vllm" || engine == "sglang" || engine == "keyed") && body.Prompt != nil:
			toks := ids(*body.Prompt, 0)
			fmt.Fprintf(w, `{"count": %d, "max_model_len": 8192, "tokens": %s}`, len(toks), mustJSON(toks))
		case engine == "llamacpp":
			// llama.cpp reads "content" and tokenizes "" when it is missing.
			text := ""
			if body.Content != nil {
				text = *body.Content
			}
			fmt.Fprintf(w, `{"tokens": %s}`, mustJSON(ids(text, 0)))
		case engine == "tgi" && body.Inputs != nil:
			var toks []map[string]any
			for i, f := range strings.Fields(*body.Inputs) {
				toks = append(toks, map[string]any{"id": i, "text": f, "start": 0, "stop": 0, "special": false})
			}
			w.Write(mustJSON(toks))
		default:
			http.Error(w, `{"error":"field required"}`, http.StatusUnprocessableEntity)
		}
	}))
	t.Cleanup(hs.Close)
	return hs
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// TestTokenizeForms: each engine's form is found and counts; only vLLM's messages form
// includes the chat template; a server without /tokenize is an error naming every form tried.
func TestTokenizeForms(t *testing.T) {
	const text = "one two three four five"
	for _, tt := range []struct {
		engine    string
		api       record.API
		form      string
		templated bool
		count     int
		maxLen    int
	}{
		{"vllm", record.APIChat, "messages form", true, 5 + engineTemplate, 4096},
		{"vllm", record.APICompletions, "prompt form", false, 5, 8192},
		{"sglang", record.APIChat, "prompt form", false, 5, 8192},
		{"llamacpp", record.APIChat, "llama.cpp content form", false, 5, 0},
		{"tgi", record.APIChat, "TGI inputs form", false, 5, 0},
	} {
		var hits atomic.Int64
		hs := tokenizeEngine(t, tt.engine, &hits)
		c := newClient(t, hs.URL, func(o *Options) { o.API = tt.api })
		tk, err := c.Tokenize(context.Background())
		if err != nil {
			t.Fatalf("%s %s: %v", tt.engine, tt.api, err)
		}
		n, err := tk.CountTokens(context.Background(), text)
		ctr := tk.Counter()
		if err != nil || n != tt.count || ctr.Templated != tt.templated || !strings.HasSuffix(ctr.Source, tt.form) || ctr.MaxModelLen != tt.maxLen {
			t.Errorf("%s %s: %d tokens (%v), counter %+v; want %d, %q, templated %v, max_model_len %d",
				tt.engine, tt.api, n, err, ctr, tt.count, tt.form, tt.templated, tt.maxLen)
		}
	}
	var hits atomic.Int64
	hs := tokenizeEngine(t, "none", &hits)
	_, err := newClient(t, hs.URL, nil).Tokenize(context.Background())
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || hits.Load() != int64(len(tokenizeForms)) {
		t.Errorf("no endpoint: error %v after %d requests", err, hits.Load())
	}
}

// TestTokenizeKey: the API key is sent only after a refusal without it, then on every count.
func TestTokenizeKey(t *testing.T) {
	var hits atomic.Int64
	hs := tokenizeEngine(t, "keyed", &hits)
	c := newClient(t, hs.URL, func(o *Options) { o.APIKey = "sk-test" })
	tk, err := c.Tokenize(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if hits.Load() != 2 {
		t.Errorf("%d requests to find the form, want 2 (without, then with the key)", hits.Load())
	}
	if n, err := tk.CountTokens(context.Background(), "a b c"); err != nil || n != 3+engineTemplate || hits.Load() != 3 {
		t.Errorf("count %d (%v) after %d requests", n, err, hits.Load())
	}
	if _, err := newClient(t, hs.URL, nil).Tokenize(context.Background()); err == nil || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("without a key: %v", err)
	}
}

// TestTokenizeKeyMessages: with the Messages API the retry after a 401 carries the key as
// x-api-key only (design §3.11: Messages sends no Authorization), never as a bearer token.
func TestTokenizeKeyMessages(t *testing.T) {
	var (
		mu    sync.Mutex
		auths []string
		keys  []string
	)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths, keys = append(auths, r.Header.Get("Authorization")), append(keys, r.Header.Get("X-Api-Key"))
		mu.Unlock()
		if r.Header.Get("X-Api-Key") != "sk-ant" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		var body struct {
			Prompt *string `json:"prompt"`
		}
		if json.NewDecoder(r.Body).Decode(&body) != nil || body.Prompt == nil {
			http.Error(w, `{"error":"field required"}`, http.StatusUnprocessableEntity)
			return
		}
		n := len(strings.Fields(*body.Prompt))
		fmt.Fprintf(w, `{"count": %d, "max_model_len": 8192, "tokens": %s}`, n, mustJSON(make([]int, n)))
	}))
	t.Cleanup(hs.Close)
	c := newClient(t, hs.URL, func(o *Options) { o.API, o.APIKey = record.APIMessages, "sk-ant" })
	if _, err := c.Tokenize(context.Background()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) < 2 || keys[0] != "" || keys[len(keys)-1] != "sk-ant" {
		t.Errorf("x-api-key per request %q: want none first, then the key after the 401", keys)
	}
	for i, a := range auths {
		if a != "" {
			t.Errorf("request %d sent Authorization %q; the Messages API sends none", i+1, a)
		}
	}
}
