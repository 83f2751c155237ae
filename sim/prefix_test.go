package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	openai "github.com/sashabaranov/go-openai"
)

// words returns n distinct words "<tag>0 <tag>1 …", one token each under either tokenizer
// rule when tag is at most 2 bytes and n ≤ 100.
func words(tag string, from, n int) string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("%s%d", tag, from+i)
	}
	return strings.Join(w, " ")
}

// metricValue reads one counter or gauge of /metrics.
func metricValue(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	f, ok := fams[name]
	if !ok || len(f.GetMetric()) != 1 {
		t.Fatalf("/metrics lacks %s", name)
	}
	m := f.GetMetric()[0]
	if l := m.GetLabel(); len(l) != 1 || l[0].GetName() != "model_name" {
		t.Errorf("%s labels %v, want model_name", name, l)
	}
	return m.GetGauge().GetValue() + m.GetCounter().GetValue()
}

// cached is usage.prompt_tokens_details.cached_tokens, or -1 when absent.
func cached(u *openai.Usage) int {
	if u == nil || u.PromptTokensDetails == nil {
		return -1
	}
	return u.PromptTokensDetails.CachedTokens
}

// TestPrefixCacheLRU: a lookup finds the leading cached blocks only, up to its limit; the
// cache holds at most its capacity, evicting the least recently used, and a prefix is
// evicted from its end.
func TestPrefixCacheLRU(t *testing.T) {
	c := newPrefixCache(4)
	a := []uint64{1, 2, 3}
	c.insert(a)
	if n := c.lookup([]uint64{1, 2, 9, 3}, 10); n != 2 {
		t.Errorf("lookup of 1 2 9 3 = %d blocks, want the leading 2", n)
	}
	if n := c.lookup(a, 2); n != 2 {
		t.Errorf("lookup limited to 2 = %d", n)
	}
	c.insert([]uint64{7, 8}) // 5 blocks offered to 4: the LRU one, a's end (3), goes
	if c.len() != 4 {
		t.Errorf("cache holds %d blocks, want its capacity 4", c.len())
	}
	if n := c.lookup(a, 3); n != 2 {
		t.Errorf("after eviction lookup(a) = %d, want 2 (its last block evicted)", n)
	}
	c.insert([]uint64{10, 11, 12, 13})
	if n := c.lookup(a, 3); n != 0 {
		t.Errorf("after 4 new blocks lookup(a) = %d, want 0", n)
	}
	if n := c.lookup([]uint64{10, 11, 12, 13}, 4); n != 4 {
		t.Errorf("newest blocks lookup = %d, want 4", n)
	}
}

// TestPrefixHitTTFT is the timing truth: with block_size 16 and prefill_tps P, a c=1 request
// whose first L = 1,600 tokens (100 blocks) are cached has TTFT lower by L ÷ P = 160 ms than
// an uncached request of the same length (2,000 tokens), within 4 step times (the step is
// 5 ms + 250 µs; the best of 3 rounds, as a loaded machine delays single requests); usage reports cached_tokens L, and the /metrics counters rise by each
// prompt and by L.
func TestPrefixHitTTFT(t *testing.T) {
	const p, prompt, hit = 10000.0, 2000, 1600
	srv, url := newTestServer(t, Config{PrefixCaching: true, StepBase: 5 * time.Millisecond, PrefillTPS: p, OutputDist: OutputFixed})
	step := srv.Config().StepTime(1, 0)
	c := newClient(url)
	send := func(text string) (time.Duration, int) {
		req := openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{{Role: "user", Content: text}},
			MaxTokens: 1, Stream: true, StreamOptions: &openai.StreamOptions{IncludeUsage: true}}
		tr, err := chatStream(context.Background(), c, req)
		if err != nil || len(tr.chunks) != 1 || tr.usage == nil || tr.usage.PromptTokens != prompt {
			t.Fatalf("stream: %v %+v", err, tr)
		}
		return tr.ttft(), cached(tr.usage)
	}
	var bestU, bestC time.Duration
	const rounds = 3
	for i := range rounds {
		// Round i's words are its own: no block of it is cached before.
		a := words(fmt.Sprintf("%c", 'a'+2*i), 0, 100) + " " + words(fmt.Sprintf("%c", 'b'+2*i), 0, 100)
		a = strings.Repeat(a+" ", prompt/200) // 2,000 words
		uncached, hu := send(a)
		if hu != 0 {
			t.Errorf("first request: cached_tokens %d, want 0", hu)
		}
		shared := strings.Fields(a)[:hit]
		b := strings.Join(shared, " ") + " " + words("z", i*1000, prompt-hit)
		withHit, hc := send(b)
		if hc != hit {
			t.Errorf("request sharing %d tokens: cached_tokens %d", hit, hc)
		}
		if i == 0 || uncached < bestU {
			bestU = uncached
		}
		if i == 0 || withHit < bestC {
			bestC = withHit
		}
	}
	want := time.Duration(hit / p * float64(time.Second))
	if got := bestU - bestC; got < want-4*step || got > want+4*step {
		t.Errorf("TTFT uncached %v − cached %v = %v, want L/P = %v ± 4 × %v", bestU, bestC, got, want, step)
	}
	t.Logf("TTFT uncached %v, cached %v: %v saved, L/P = %v", bestU, bestC, bestU-bestC, want)
	if q, h := metricValue(t, url, "vllm:prefix_cache_queries_total"), metricValue(t, url, "vllm:prefix_cache_hits_total"); q != 2*rounds*prompt || h != rounds*hit {
		t.Errorf("/metrics queries %v hits %v, want %d and %d", q, h, 2*rounds*prompt, rounds*hit)
	}
	if st := srv.Stats(); st.PrefixQueryTokens != 2*rounds*prompt || st.PrefixHitTokens != rounds*hit {
		t.Errorf("Stats %+v", st)
	}
}

// TestPrefixChatConversation: a chat [u1] → reply a1 → [u1, a1, u2] hits
// ⌊(|T| + |u1| + |a1|) ÷ 16⌋ × 16 tokens, the template T, u1 and the reply all cached. With
// reasoning, a history that drops the reasoning misses the blocks after the prompt's, as on
// vLLM; one that keeps it in order hits them all. Usage lies (usage_prompt_tokens) leave
// cached_tokens true.
func TestPrefixChatConversation(t *testing.T) {
	const tmpl, nu1, nout, nu2 = 5, 37, 29, 10
	for _, tc := range []struct {
		name      string
		reasoning int
		keep      bool // the history keeps the reasoning before the answer
		want      int
	}{
		{"no reasoning", 0, false, (tmpl + nu1 + nout) / 16 * 16},
		{"reasoning dropped", 8, false, (tmpl + nu1) / 16 * 16},
		{"reasoning kept", 8, true, (tmpl + nu1 + nout) / 16 * 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, url := newTestServer(t, Config{PrefixCaching: true, StepBase: time.Millisecond, ChatTemplateTokens: tmpl,
				OutputTokens: nout, OutputDist: OutputFixed, ReasoningTokens: tc.reasoning,
				Faults: Faults{UsagePromptTokens: ptr[int64](3)}})
			c := newClient(url)
			u1 := openai.ChatCompletionMessage{Role: "user", Content: words("u", 0, nu1)}
			r1, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{u1}})
			if err != nil {
				t.Fatal(err)
			}
			if cached(&r1.Usage) != 0 || r1.Usage.PromptTokens != 3 {
				t.Errorf("first turn usage %+v, want cached 0 and the lie 3", r1.Usage)
			}
			m := r1.Choices[0].Message
			a1 := openai.ChatCompletionMessage{Role: "assistant", Content: m.Content}
			if tc.keep {
				a1.Content = m.ReasoningContent + m.Content
			}
			u2 := openai.ChatCompletionMessage{Role: "user", Content: words("v", 0, nu2)}
			r2, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: []openai.ChatCompletionMessage{u1, a1, u2}})
			if err != nil {
				t.Fatal(err)
			}
			if got := cached(&r2.Usage); got != tc.want {
				t.Errorf("second turn cached_tokens %d, want %d", got, tc.want)
			}
		})
	}
}

// TestPrefixLRUEvicts: with prefix_cache_blocks 4, a 70-token prompt (4 full blocks) hits its
// 64 cached tokens when repeated, and misses once another prompt's 4 blocks evicted it.
// Caching off: no prompt_tokens_details, the counters present and 0.
func TestPrefixLRUEvicts(t *testing.T) {
	_, url := newTestServer(t, Config{PrefixCaching: true, PrefixCacheBlocks: 4, StepBase: time.Millisecond})
	a := fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, words("a", 0, 70))
	b := fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, words("b", 0, 70))
	for i, tc := range []struct {
		body string
		want int64
	}{{a, 0}, {a, 64}, {b, 0}, {a, 0}} {
		code, body := rawPost(t, url, "/v1/completions", tc.body)
		var ans struct{ Usage usageOut }
		if err := json.Unmarshal(body, &ans); code != 200 || err != nil || ans.Usage.PromptTokensDetails == nil {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
		if got := ans.Usage.PromptTokensDetails.CachedTokens; got != tc.want {
			t.Errorf("request %d: cached_tokens %d, want %d", i, got, tc.want)
		}
	}
	_, off := newTestServer(t, Config{StepBase: time.Millisecond})
	code, body := rawPost(t, off, "/v1/completions", a)
	if code != 200 || strings.Contains(string(body), "prompt_tokens_details") {
		t.Errorf("caching off: %d %s, want no prompt_tokens_details", code, body)
	}
	for _, name := range []string{"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total"} {
		if v := metricValue(t, off, name); v != 0 {
			t.Errorf("caching off: %s = %v, want 0", name, v)
		}
	}
}

// TestPrefixPreemptionLooksUpAgain: a request evicted by preemption looks its prompt up
// again when re-admitted, and then finds the blocks the other request's prefill cached.
// Two 40-token prompts with equal ids (2 full blocks, hit cap ⌊39 ÷ 16⌋ = 2) in an
// 100-token cache: the second is admitted in the same step as the first (hit 0, the first's
// blocks are cached when its prefill ends) and preempted as both grow; each re-admission
// queries 40 tokens and hits 32.
func TestPrefixPreemptionLooksUpAgain(t *testing.T) {
	rc, err := Resolve(Config{PrefixCaching: true, KVCacheTokens: 100, Preemption: true, MaxNumSeqs: 2, StepBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(rc, nil)
	pp := newPrefixPrompt(rc.Tokenizer.appendIDs(nil, words("p", 0, 40)), rc.BlockSize)
	reqs := []*request{newRequest(1, 40, 40), newRequest(2, 40, 40)}
	for _, r := range reqs {
		r.blocks = pp.hashes
		e.enqueue(r)
	}
	for range 400 {
		e.begin()
		e.finish()
		if len(e.running)+len(e.waiting) == 0 {
			break
		}
	}
	if len(e.running)+len(e.waiting) != 0 || e.preempts == 0 {
		t.Fatalf("%d running %d waiting, %d preemptions: want both done after preemptions", len(e.running), len(e.waiting), e.preempts)
	}
	if q, h := e.prefixQueries, e.prefixHits; q != 40*(2+e.preempts) || h != 32*e.preempts {
		t.Errorf("queries %d hits %d after %d preemptions, want 40 × (2 + p) and 32 × p", q, h, e.preempts)
	}
	if reqs[1].cached.Load() != 0 {
		t.Errorf("usage of the preempted request reports %d cached, want its first lookup's 0", reqs[1].cached.Load())
	}
}

// TestLongChatHistory: a chat history of 400 messages, 40,005 tokens with the template, is
// counted (usage.prompt_tokens, the prompt-token counter), admitted into a 50,000-token KV
// cache, and refused with HTTP 400 over max_model_len like any prompt; the next turn hits
// every full block of the history and its reply.
func TestLongChatHistory(t *testing.T) {
	const msgs, per, tmpl = 400, 100, 5
	srv, url := newTestServer(t, Config{PrefixCaching: true, StepBase: time.Millisecond, PrefillTPS: 1e8, ChatTemplateTokens: tmpl,
		KVCacheTokens: 50000, MaxModelLen: 50000, OutputTokens: 8, OutputDist: OutputFixed})
	hist := make([]openai.ChatCompletionMessage, msgs)
	for i := range hist {
		hist[i] = openai.ChatCompletionMessage{Role: []string{"user", "assistant"}[i%2], Content: words(fmt.Sprintf("m%c", 'a'+i%26), i*per, per)}
	}
	c := newClient(url)
	r, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: hist})
	if err != nil {
		t.Fatal(err)
	}
	const prompt = msgs*per + tmpl
	if r.Usage.PromptTokens != prompt || srv.Stats().PromptTokens != prompt {
		t.Errorf("usage prompt_tokens %d, counter %d, want %d", r.Usage.PromptTokens, srv.Stats().PromptTokens, prompt)
	}
	next := append(hist, openai.ChatCompletionMessage{Role: "assistant", Content: r.Choices[0].Message.Content},
		openai.ChatCompletionMessage{Role: "user", Content: "one more"})
	r2, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: next})
	if err != nil {
		t.Fatal(err)
	}
	if want := (prompt + 8) / 16 * 16; cached(&r2.Usage) != want {
		t.Errorf("next turn cached_tokens %d, want %d", cached(&r2.Usage), want)
	}
	_, err = c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Messages: next, MaxTokens: 50000 - prompt})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 400 || !strings.Contains(apiErr.Message, "maximum context length is 50000") {
		t.Errorf("history + max_tokens over max_model_len: %v, want 400", err)
	}
}

// TestPrefixConfigValidation: block_size < 1 and prefix_cache_blocks < 0 are refused, and
// the capacity defaults follow the KV cache.
func TestPrefixConfigValidation(t *testing.T) {
	if _, err := Resolve(Config{BlockSize: -1, PrefixCacheBlocks: -2}); err == nil ||
		!strings.Contains(err.Error(), "sim: block_size: -1 must be at least 1") || !strings.Contains(err.Error(), "sim: prefix_cache_blocks: -2") {
		t.Errorf("Resolve(block_size -1, prefix_cache_blocks -2) = %v", err)
	}
	c, _ := Resolve(Config{})
	c.BlockSize = 0
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "block_size") {
		t.Errorf("block_size 0 accepted: %v", err)
	}
	for _, tc := range []struct{ kv, blocks, want int }{{0, 0, 65536}, {1000, 0, 62}, {8, 0, 1}, {1000, 7, 7}} {
		c, err := Resolve(Config{KVCacheTokens: tc.kv, PrefixCacheBlocks: tc.blocks})
		if err != nil || c.BlockSize != 16 || c.PrefixCacheCapacity() != tc.want {
			t.Errorf("kv %d blocks %d: capacity %d block_size %d (%v), want %d and 16", tc.kv, tc.blocks, c.PrefixCacheCapacity(), c.BlockSize, err, tc.want)
		}
	}
}
