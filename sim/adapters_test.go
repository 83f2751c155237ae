package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// adapterConfig is a batching engine whose costs make the arithmetic plain: a step of 4 ms +
// 1 ms per sequence, prefill at 10,000 tokens/s, and the adapter sql-lora at slowdown 3.
func adapterConfig() Config {
	return Config{StepBase: 4 * time.Millisecond, StepPerSeq: time.Millisecond, PrefillTPS: 10000,
		Adapters: []Adapter{{Name: "sql-lora", Slowdown: 3}, {Name: "chat-lora"}}}
}

// tokenTimes drives e in virtual time until every request of rs has finished and returns, per
// request, the virtual time of each of its tokens.
func tokenTimes(e *engine, rs ...*request) [][]time.Duration {
	out := make([][]time.Duration, len(rs))
	var now time.Duration
	for range 10000 {
		if len(e.running) == 0 && len(e.waiting) == 0 {
			break
		}
		now += e.begin()
		e.finish()
		for i, r := range rs {
			for int(r.generated.Load()) > len(out[i]) {
				out[i] = append(out[i], now)
			}
		}
	}
	return out
}

// TestAdapterTokenCost: in virtual time (no clocks), an adapter request of slowdown k = 3 in
// the same batch as a base request emits every third step, so its TPOT is exactly 3 × the
// base's (30 base tokens and 10 adapter tokens span the same 30 steps of t(2) = 6 ms: TPOT
// 6 ms and 18 ms); it counts as a sequence in every step's cost (t(2), not t(1), while it
// waits for its credit). Alone, its TTFT is k × the base's: k × (100 tokens ÷ 10,000/s +
// t(1)) = 3 × 15 ms = 45 ms.
func TestAdapterTokenCost(t *testing.T) {
	rc, err := Resolve(adapterConfig())
	if err != nil {
		t.Fatal(err)
	}
	k, ok := rc.served("sql-lora")
	if !ok || k != 3 {
		t.Fatalf("served(sql-lora) = %g, %t: want 3, true", k, ok)
	}
	if k, ok := rc.served("chat-lora"); !ok || k != 1 {
		t.Fatalf("served(chat-lora) = %g, %t: want 1 (slowdown unset), true", k, ok)
	}
	adapter := func(seq uint64, out int) *request {
		r := newRequest(seq, 100, out)
		r.slowdown = k
		return r
	}

	e := newEngine(rc, nil, time.Now())
	base, ad := newRequest(1, 100, 30), adapter(2, 10)
	e.enqueue(base)
	e.enqueue(ad)
	ts := tokenTimes(e, base, ad)
	step := rc.StepTime(2, 0)
	tpot := func(x []time.Duration) time.Duration { return (x[len(x)-1] - x[0]) / time.Duration(len(x)-1) }
	if got := tpot(ts[0]); got != step {
		t.Errorf("base TPOT %v, want t(2) = %v", got, step)
	}
	if got, want := tpot(ts[1]), time.Duration(k*float64(step)); got != want {
		t.Errorf("adapter TPOT %v, want %g × t(2) = %v", got, k, want)
	}
	if ts[0][len(ts[0])-1] != ts[1][len(ts[1])-1] {
		t.Errorf("last tokens at %v and %v: want the same step", ts[0][len(ts[0])-1], ts[1][len(ts[1])-1])
	}

	alone := func(r *request) time.Duration {
		e := newEngine(rc, nil, time.Now())
		e.enqueue(r)
		return tokenTimes(e, r)[0][0]
	}
	baseTTFT := time.Duration(100.0/rc.PrefillTPS*float64(time.Second)) + rc.StepTime(1, 0)
	if got := alone(newRequest(3, 100, 4)); got != baseTTFT {
		t.Errorf("base TTFT alone %v, want %v", got, baseTTFT)
	}
	if got, want := alone(adapter(4, 4)), time.Duration(k*float64(baseTTFT)); got != want {
		t.Errorf("adapter TTFT alone %v, want %g × %v = %v", got, k, baseTTFT, want)
	}
}

// TestAdaptersServed: over loopback HTTP, GET /v1/models lists the base model and each
// adapter with the base as its parent (as vLLM lists LoRA adapters); a request for an adapter
// streams with the adapter's name in its chunks; an unknown model is 404 with vLLM's message.
func TestAdaptersServed(t *testing.T) {
	_, url := newTestServer(t, adapterConfig())
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data []struct {
			ID     string  `json:"id"`
			Parent *string `json:"parent"`
		} `json:"data"`
	}
	err = json.NewDecoder(resp.Body).Decode(&list)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Data) != 3 || list.Data[0].ID != DefaultModel || list.Data[0].Parent != nil {
		t.Fatalf("models %+v: want %s (no parent), then the adapters", list.Data, DefaultModel)
	}
	for i, want := range []string{"sql-lora", "chat-lora"} {
		if m := list.Data[i+1]; m.ID != want || m.Parent == nil || *m.Parent != DefaultModel {
			t.Errorf("model %d: %+v, want %s with parent %s", i+1, m, want, DefaultModel)
		}
	}

	code, body := rawPost(t, url, "/v1/chat/completions", `{"model": "nope", "messages": [{"role": "user", "content": "hi"}]}`)
	if code != http.StatusNotFound || !strings.Contains(string(body), "The model `nope` does not exist.") {
		t.Errorf("unknown model: %d %s, want 404 naming it", code, body)
	}
	code, body = rawPost(t, url, "/v1/chat/completions", `{"model": "sql-lora", "max_tokens": 3, "messages": [{"role": "user", "content": "hi"}]}`)
	if code != http.StatusOK || !strings.Contains(string(body), `"model":"sql-lora"`) {
		t.Errorf("adapter request: %d %s, want 200 naming sql-lora", code, body)
	}
}

// TestAdapterSlowdownFixedMode: in fixed mode an adapter's TTFT and ITL are the configured
// ones times its slowdown: over loopback, streams of 12 tokens for the base model and for
// sql-lora (slowdown 3) at once have mean gaps in the ratio 3 (±15%: the two means are over
// the same 11 gaps of one absolute schedule each).
func TestAdapterSlowdownFixedMode(t *testing.T) {
	cfg := adapterConfig()
	cfg.Profile, cfg.TTFT, cfg.ITL = ProfileFixed, 10*time.Millisecond, 8*time.Millisecond
	_, url := newTestServer(t, cfg)
	c := newClient(url)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	traces := make([]streamTrace, 2)
	errs := make([]error, 2)
	for i, model := range []string{DefaultModel, "sql-lora"} {
		wg.Go(func() {
			req := chatReq(12, true)
			req.Model = model
			traces[i], errs[i] = chatStream(ctx, c, req)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || len(traces[i].chunks) != 12 {
			t.Fatalf("stream %d: %d chunks, %v", i, len(traces[i].chunks), err)
		}
	}
	ratio := float64(traces[1].meanGap()) / float64(traces[0].meanGap())
	t.Logf("mean gaps: base %v, sql-lora %v (ratio %.2f)", traces[0].meanGap(), traces[1].meanGap(), ratio)
	if ratio < 3*0.85 || ratio > 3*1.15 {
		t.Errorf("ITL ratio %.2f, want the slowdown 3 ± 15%%", ratio)
	}
	if traces[1].ttft() < 3*cfg.TTFT {
		t.Errorf("adapter TTFT %v, want ≥ 3 × %v", traces[1].ttft(), cfg.TTFT)
	}
}

// TestAdaptersConfig: Resolve refuses an adapter without a name, one named like the base
// model or twice, a name with whitespace around it or a control character, and a slowdown
// below 1, but takes a name with inner spaces and commas; ParseAdapters reads
// NAME[:SLOWDOWN] lists and refuses a name with a space.
func TestAdaptersConfig(t *testing.T) {
	for _, tc := range []struct {
		ads  []Adapter
		want string
	}{
		{[]Adapter{{Name: ""}}, "sim: adapters: entry 0: name"},
		{[]Adapter{{Name: DefaultModel}}, "served already"},
		{[]Adapter{{Name: "a"}, {Name: "a"}}, "entry 1: \"a\" is served already"},
		{[]Adapter{{Name: "a", Slowdown: 0.5}}, "slowdown 0.5 must be a finite number ≥ 1"},
		{[]Adapter{{Name: "a\x1b[2J"}}, `entry 0: name "a\x1b[2J" must be`},
		{[]Adapter{{Name: " a"}}, `entry 0: name " a" must be`},
	} {
		_, err := Resolve(Config{Adapters: tc.ads})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("adapters %+v: error %v, want %q", tc.ads, err, tc.want)
		}
	}
	// A name with a space or comma is a valid model name (workload.models can mix one in);
	// only the flag's syntax cannot hold it.
	if _, err := Resolve(Config{Adapters: []Adapter{{Name: "team a, lora v2"}}}); err != nil {
		t.Errorf("an adapter named with a space and a comma: %v", err)
	}
	if _, err := Resolve(Config{Model: "base\x07"}); err == nil || !strings.Contains(err.Error(), `sim: model: "base\a" has a control character`) {
		t.Errorf("a model with a control character: %v", err)
	}
	if _, err := ParseAdapters("team a:2"); err == nil || !strings.Contains(err.Error(), "cannot hold spaces or commas") {
		t.Errorf("ParseAdapters(team a:2): %v, want the flag's rule", err)
	}
	got, err := ParseAdapters("sql-lora:3, chat-lora")
	if err != nil || len(got) != 2 || got[0] != (Adapter{Name: "sql-lora", Slowdown: 3}) || got[1] != (Adapter{Name: "chat-lora"}) {
		t.Errorf("ParseAdapters = %+v, %v", got, err)
	}
	if _, err := ParseAdapters("a:fast"); err == nil {
		t.Error("ParseAdapters(a:fast): no error")
	}
	// The banner quotes a name with a space or comma (and escapes control characters), so
	// each adapter reads apart.
	if b := (Config{Model: "base", Adapters: []Adapter{{Name: "team a, lora v2", Slowdown: 2}, {Name: "sql-lora"}}}).adaptersString(); b != ` adapters="team a, lora v2"×2,sql-lora` {
		t.Errorf("banner %q", b)
	}
	if b := bannerName("m\x1b[2J"); b != `"m\x1b[2J"` {
		t.Errorf("bannerName = %s", b)
	}
	rc, _ := Resolve(Config{})
	if m := rc.WithModels([]string{DefaultModel, "x", "x"}).models(); strings.Join(m, ",") != DefaultModel+",x" {
		t.Errorf("WithModels: serves %v, want %s and x", m, DefaultModel)
	}
}

// TestAdapterPrefixCacheApart: with prefix caching, a prompt the base model has cached is
// not a hit for an adapter (each model hashes its blocks from a root of its own, as vLLM keys
// blocks by LoRA), and is for the base model again: 48 words are 3 full blocks of 16, of
// which the first 2 are hits the second time (the last token is always computed, as vLLM
// does, so the block holding it is not a hit: 32 tokens).
func TestAdapterPrefixCacheApart(t *testing.T) {
	cfg := adapterConfig()
	cfg.PrefixCaching, cfg.PrefillTPS = true, 1e6
	_, url := newTestServer(t, cfg)
	prompt := strings.TrimSpace(strings.Repeat("alpha beta gamma delta ", 12)) // 48 words
	cached := func(model string) int {
		t.Helper()
		code, body := rawPost(t, url, "/v1/completions", `{"model": "`+model+`", "max_tokens": 1, "prompt": "`+prompt+`"}`)
		var out struct {
			Usage struct {
				Details *struct {
					Cached int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &out); code != http.StatusOK || err != nil || out.Usage.Details == nil {
			t.Fatalf("%s: %d %s (%v)", model, code, body, err)
		}
		return out.Usage.Details.Cached
	}
	if got := cached(DefaultModel); got != 0 {
		t.Errorf("first base request: %d cached tokens, want 0", got)
	}
	if got := cached("sql-lora"); got != 0 {
		t.Errorf("adapter after the base: %d cached tokens, want 0 (its own blocks)", got)
	}
	if got := cached(DefaultModel); got != 32 {
		t.Errorf("base again: %d cached tokens, want 32", got)
	}
	if got := cached("sql-lora"); got != 32 {
		t.Errorf("adapter again: %d cached tokens, want 32", got)
	}
}
