package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
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

	// A lookup refreshes recency: a looked up after [7] was inserted outlives it, and the
	// looked-up prefix is evicted from its end.
	c = newPrefixCache(4)
	c.insert(a)
	c.insert([]uint64{7})
	if n := c.lookup(a, 3); n != 3 {
		t.Fatalf("lookup(a) = %d, want 3", n)
	}
	c.insert([]uint64{8}) // evicts the LRU block: 7, not a's 3
	if n := c.lookup([]uint64{7}, 1); n != 0 {
		t.Errorf("7, inserted before a was looked up, still cached")
	}
	if n := c.lookup(a, 3); n != 3 {
		t.Errorf("after inserting 8 lookup(a) = %d, want 3 (7 evicted instead)", n)
	}
	c.insert([]uint64{20, 21}) // evicts the LRU 8, then a's end, 3
	if n := c.lookup(a, 3); n != 2 {
		t.Errorf("after 2 more blocks lookup(a) = %d, want 2 (a evicted from its end)", n)
	}
}

// TestPrefixOutputHashes: the blocks cached when a request finishes are those of its prompt
// ids followed by its output ids (reasoning "hmm" first, then "tok"), hashed whole.
func TestPrefixOutputHashes(t *testing.T) {
	hmm, tok := tokenID("hmm"), tokenID("tok")
	for _, tc := range []struct{ prompt, reasoning, answer int }{{0, 0, 0}, {5, 0, 3}, {16, 0, 16}, {37, 8, 21}, {40, 30, 90}, {3, 0, 13}} {
		ids := make([]int, tc.prompt)
		for i := range ids {
			ids[i] = 1000 + i
		}
		pp := newPrefixPrompt(ids, 16)
		seq := append([]int{}, ids...)
		for i := range tc.reasoning + tc.answer {
			id := tok
			if i < tc.reasoning {
				id = hmm
			}
			seq = append(seq, id)
		}
		got, want := pp.outputHashes(16, tc.reasoning, tc.answer), appendBlockHashes(nil, seq, 16, 0, hashRoot)
		if !slices.Equal(got, want) {
			t.Errorf("%+v: output hashes %x, want %x", tc, got, want)
		}
	}
}

// TestPrefixHitStepTime is the timing truth, exact at engine level: with block_size 16 and
// prefill_tps P, a request whose first L = 1,600 tokens (100 blocks) are cached plans a first
// step of StepTime(1, prompt) + (prompt − L) ÷ P (the hit counts as KV in use at once), L ÷ P
// = 160 ms shorter than the same-length request (2,000 tokens) uncached.
func TestPrefixHitStepTime(t *testing.T) {
	const p, prompt, hit = 10000.0, 2000, 1600
	rc, err := Resolve(Config{PrefixCaching: true, StepBase: 5 * time.Millisecond, StepPerKVToken: time.Microsecond, PrefillTPS: p})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(rc, nil, time.Now())
	ids := make([]int, prompt)
	for i := range ids {
		ids[i] = i
	}
	first := func(ids []int) (time.Duration, *request) {
		r := newRequest(1, prompt, 1)
		r.blocks = newPrefixPrompt(ids, rc.BlockSize).hashes
		e.enqueue(r)
		d := e.begin()
		e.finish() // its one token: it finishes, its prompt's blocks cached
		return d, r
	}
	prefill := func(n int) time.Duration { return time.Duration(float64(n) / p * float64(time.Second)) }
	uncached, r1 := first(ids)
	if want := rc.StepTime(1, prompt) + prefill(prompt); uncached != want || r1.cached.Load() != 0 {
		t.Errorf("uncached first step %v (cached %d), want StepTime(1, %d) + %d ÷ P = %v", uncached, r1.cached.Load(), prompt, prompt, want)
	}
	other := append(ids[:hit:hit], ids[hit:]...)
	for i := hit; i < prompt; i++ {
		other[i] += prompt // the same first L tokens, then others
	}
	withHit, r2 := first(other)
	if want := rc.StepTime(1, prompt) + prefill(prompt-hit); withHit != want || r2.cached.Load() != hit {
		t.Errorf("first step with a %d-token hit %v (cached %d), want StepTime(1, %d) + %d ÷ P = %v", hit, withHit, r2.cached.Load(), prompt, prompt-hit, want)
	}
	if got, want := uncached-withHit, time.Duration(hit/p*float64(time.Second)); got != want {
		t.Errorf("uncached − cached first step = %v, want L ÷ P = %v exactly", got, want)
	}
	if e.prefixQueries != 2*prompt || e.prefixHits != hit || e.kvActive != 0 {
		t.Errorf("queries %d hits %d, KV active %d after both: want %d, %d and 0", e.prefixQueries, e.prefixHits, e.kvActive, 2*prompt, hit)
	}
}

// TestPrefixHitTTFT is the same truth over HTTP: a c = 1 request whose first L = 1,600 of
// 2,000 tokens are cached has a TTFT lower than the uncached one's by at least L ÷ 2P = 80 ms
// (L ÷ P = 160 ms exactly at engine level; the best of 2 rounds, as a loaded machine delays
// single requests); usage reports cached_tokens L, and the /metrics counters rise by each
// prompt and by L.
func TestPrefixHitTTFT(t *testing.T) {
	const p, prompt, hit = 10000.0, 2000, 1600
	srv, url := newTestServer(t, Config{PrefixCaching: true, StepBase: 5 * time.Millisecond, PrefillTPS: p, OutputDist: outputFixed})
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
	const rounds = 2
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
	lp := time.Duration(hit / p * float64(time.Second))
	if saved := bestU - bestC; bestC >= bestU || saved < lp/2 {
		t.Errorf("TTFT uncached %v − cached %v = %v, want at least L ÷ 2P = %v", bestU, bestC, saved, lp/2)
	}
	t.Logf("TTFT uncached %v, cached %v: %v saved, L ÷ P = %v", bestU, bestC, bestU-bestC, lp)
	if q, h := metricValue(t, url, "vllm:prefix_cache_queries_total"), metricValue(t, url, "vllm:prefix_cache_hits_total"); q != 2*rounds*prompt || h != rounds*hit {
		t.Errorf("/metrics queries %v hits %v, want %d and %d", q, h, 2*rounds*prompt, rounds*hit)
	}
	if st := srv.Stats(); st.PrefixQueryTokens != 2*rounds*prompt || st.PrefixHitTokens != rounds*hit {
		t.Errorf("Stats %+v", st)
	}
}

// chatTurn sends one chat request, streamed (with include_usage) or plain, and returns the
// reply's reasoning and content and its usage.
func chatTurn(t *testing.T, c *openai.Client, msgs []openai.ChatCompletionMessage, stream bool) (reasoning, content string, u *openai.Usage) {
	t.Helper()
	req := openai.ChatCompletionRequest{Messages: msgs}
	if !stream {
		r, err := c.CreateChatCompletion(context.Background(), req)
		if err != nil || len(r.Choices) != 1 {
			t.Fatalf("chat: %v %+v", err, r)
		}
		return r.Choices[0].Message.ReasoningContent, r.Choices[0].Message.Content, &r.Usage
	}
	req.Stream, req.StreamOptions = true, &openai.StreamOptions{IncludeUsage: true}
	st, err := c.CreateChatCompletionStream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var rb, cb strings.Builder
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return rb.String(), cb.String(), u
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != nil {
			u = resp.Usage
		}
		for _, ch := range resp.Choices {
			rb.WriteString(ch.Delta.ReasoningContent)
			cb.WriteString(ch.Delta.Content)
		}
	}
}

// TestPrefixChatConversation: a chat [u1] → reply a1 → [u1, a1, u2] hits
// ⌊(|T| + |u1| + |a1|) ÷ 16⌋ × 16 tokens, the template T, u1 and the reply all cached, the
// turns streamed or plain alike. With reasoning, a history that drops the reasoning misses
// the blocks after the prompt's, as on vLLM; one that keeps it in order hits them all. Usage
// lies (usage_prompt_tokens) leave cached_tokens true.
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
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				_, url := newTestServer(t, Config{PrefixCaching: true, StepBase: time.Millisecond, ChatTemplateTokens: tmpl,
					OutputTokens: nout, OutputDist: outputFixed, ReasoningTokens: tc.reasoning,
					Faults: Faults{UsagePromptTokens: ptr[int64](3)}})
				c := newClient(url)
				u1 := openai.ChatCompletionMessage{Role: "user", Content: words("u", 0, nu1)}
				reasoning, content, u := chatTurn(t, c, []openai.ChatCompletionMessage{u1}, stream)
				if cached(u) != 0 || u.PromptTokens != 3 {
					t.Errorf("first turn usage %+v, want cached 0 and the lie 3", u)
				}
				if countTokens(reasoning) != tc.reasoning || countTokens(content) != nout-tc.reasoning {
					t.Errorf("first turn: %d reasoning and %d content tokens, want %d and %d",
						countTokens(reasoning), countTokens(content), tc.reasoning, nout-tc.reasoning)
				}
				a1 := openai.ChatCompletionMessage{Role: "assistant", Content: content}
				if tc.keep {
					a1.Content = reasoning + content
				}
				u2 := openai.ChatCompletionMessage{Role: "user", Content: words("v", 0, nu2)}
				if _, _, u := chatTurn(t, c, []openai.ChatCompletionMessage{u1, a1, u2}, stream); cached(u) != tc.want {
					t.Errorf("second turn cached_tokens %d, want %d", cached(u), tc.want)
				}
			})
		}
	}
}

// TestPrefixHitCap: a 64-token completion prompt (4 full blocks) sent twice hits 48 tokens,
// not 64: at least one prompt token is prefilled, so the hit is at most
// ⌊(64 − 1) ÷ 16⌋ × 16 (vLLM recomputes the last token).
func TestPrefixHitCap(t *testing.T) {
	_, url := newTestServer(t, Config{PrefixCaching: true, StepBase: time.Millisecond})
	body := fmt.Sprintf(`{"prompt":%q,"max_tokens":1}`, words("a", 0, 64))
	for i, want := range []int64{0, 48} {
		code, b := rawPost(t, url, "/v1/completions", body)
		var ans struct{ Usage usageOut }
		if err := json.Unmarshal(b, &ans); code != 200 || err != nil || ans.Usage.PromptTokens != 64 || ans.Usage.PromptTokensDetails == nil {
			t.Fatalf("request %d: %d %s", i, code, b)
		}
		if got := ans.Usage.PromptTokensDetails.CachedTokens; got != want {
			t.Errorf("request %d: cached_tokens %d, want %d", i, got, want)
		}
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
// prefills its prompt and generated tokens less the 32 it hits (read from the step time,
// StepTime + prefilled ÷ P), but only first lookups count (vLLM V1 counts a preempted
// request's repeat lookup apart, unexported): queries 80, hits 0.
func TestPrefixPreemptionLooksUpAgain(t *testing.T) {
	rc, err := Resolve(Config{PrefixCaching: true, KVCacheTokens: 100, Preemption: true, MaxNumSeqs: 2, StepBase: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := newEngine(rc, nil, time.Now())
	pp := newPrefixPrompt(rc.Tokenizer.appendIDs(nil, words("p", 0, 40)), rc.BlockSize)
	reqs := []*request{newRequest(1, 40, 40), newRequest(2, 40, 40)}
	for _, r := range reqs {
		r.blocks = pp.hashes
		e.enqueue(r)
	}
	readmitted := 0
	for range 400 {
		// What each waiting request will prefill when admitted: prompt + generated tokens, less
		// the 32 cached when it looks up again (its first lookup finds nothing).
		want := map[*request]int{}
		for _, r := range e.waiting {
			want[r] = r.prompt + int(r.generated.Load())
			if r.looked {
				want[r] -= 32
			}
		}
		d := e.begin()
		wantPrefill := 0
		for _, r := range e.running {
			if n, ok := want[r]; ok {
				wantPrefill += n
				if r.looked && r.generated.Load() > 0 {
					readmitted++
				}
			}
		}
		got := math.Round((d - rc.StepTime(len(e.producers), e.kvActive)).Seconds() * rc.PrefillTPS)
		if int(got) != wantPrefill {
			t.Fatalf("step %d prefilled %v tokens, want %d", e.steps, got, wantPrefill)
		}
		e.finish()
		if len(e.running)+len(e.waiting) == 0 {
			break
		}
	}
	if len(e.running)+len(e.waiting) != 0 || e.preempts == 0 || readmitted != int(e.preempts) {
		t.Fatalf("%d running %d waiting, %d preemptions, %d re-admissions: want both done after preemptions, each re-admitted",
			len(e.running), len(e.waiting), e.preempts, readmitted)
	}
	if q, h := e.prefixQueries, e.prefixHits; q != 80 || h != 0 {
		t.Errorf("queries %d hits %d after %d preemptions, want the first lookups' 80 and 0", q, h, e.preempts)
	}
	if reqs[0].cached.Load() != 0 || reqs[1].cached.Load() != 0 {
		t.Errorf("usage reports %d and %d cached, want the first lookups' 0", reqs[0].cached.Load(), reqs[1].cached.Load())
	}
}

// TestLongChatHistory: a chat history of 400 messages, 40,005 tokens with the template, is
// counted (usage.prompt_tokens, the prompt-token counter), admitted into a 50,000-token KV
// cache, and refused with HTTP 400 over max_model_len like any prompt; the next turn hits
// every full block of the history and its reply.
func TestLongChatHistory(t *testing.T) {
	const msgs, per, tmpl = 400, 100, 5
	srv, url := newTestServer(t, Config{PrefixCaching: true, StepBase: time.Millisecond, PrefillTPS: 1e8, ChatTemplateTokens: tmpl,
		KVCacheTokens: 50000, MaxModelLen: 50000, OutputTokens: 8, OutputDist: outputFixed})
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
