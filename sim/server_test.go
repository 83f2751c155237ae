package sim

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/selfcheck"
	openai "github.com/sashabaranov/go-openai"
)

// newTestServer serves cfg over real loopback HTTP.
func newTestServer(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	srv, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv)
	t.Cleanup(func() {
		_ = srv.Close()
		ts.Close()
	})
	return srv, ts.URL
}

func newClient(url string) *openai.Client {
	cc := openai.DefaultConfig("unused")
	cc.BaseURL = url + "/v1"
	return openai.NewClientWithConfig(cc)
}

func chatReq(maxTokens int, stream bool) openai.ChatCompletionRequest {
	return openai.ChatCompletionRequest{
		Model:         DefaultModel,
		Messages:      []openai.ChatCompletionMessage{{Role: "system", Content: "be brief"}, {Role: "user", Content: "one two three four"}},
		MaxTokens:     maxTokens,
		Stream:        stream,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	}
}

// streamTrace is what a client saw of one stream.
type streamTrace struct {
	sent     time.Time
	chunks   []time.Time // arrival of each content chunk
	tokens   int         // words of content
	finish   string
	usage    *openai.Usage
	roleOnly bool // first chunk was the role-only chunk
}

// chatStream reads one chat stream with go-openai.
func chatStream(ctx context.Context, c *openai.Client, req openai.ChatCompletionRequest) (streamTrace, error) {
	tr := streamTrace{sent: time.Now()}
	st, err := c.CreateChatCompletionStream(ctx, req)
	if err != nil {
		return tr, err
	}
	defer st.Close()
	first := true
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			return tr, nil
		}
		if err != nil {
			return tr, err
		}
		now := time.Now()
		if resp.Usage != nil {
			tr.usage = resp.Usage
		}
		if len(resp.Choices) == 0 {
			continue
		}
		ch := resp.Choices[0]
		if first {
			tr.roleOnly = ch.Delta.Role == "assistant" && ch.Delta.Content == ""
			first = false
		}
		if ch.Delta.Content != "" {
			tr.chunks = append(tr.chunks, now)
			tr.tokens += countTokens(ch.Delta.Content)
		}
		if ch.FinishReason != "" {
			tr.finish = string(ch.FinishReason)
		}
	}
}

func (tr streamTrace) ttft() time.Duration { return tr.chunks[0].Sub(tr.sent) }

// meanGap is (last − first) ÷ (chunks − 1).
func (tr streamTrace) meanGap() time.Duration {
	return tr.chunks[len(tr.chunks)-1].Sub(tr.chunks[0]) / time.Duration(len(tr.chunks)-1)
}

func TestChatStreamDecodes(t *testing.T) {
	_, url := newTestServer(t, Config{StepBase: time.Millisecond, TokensPerChunk: 3})
	tr, err := chatStream(context.Background(), newClient(url), chatReq(7, true))
	if err != nil {
		t.Fatal(err)
	}
	if !tr.roleOnly {
		t.Error("first chat chunk is not role-only")
	}
	// First chunk carries 1 token, then 3 per chunk: 1 + 3 + 3 = 7 in 3 chunks.
	if tr.tokens != 7 || len(tr.chunks) != 3 || tr.finish != "length" {
		t.Errorf("got %d tokens in %d chunks finish %q, want 7 in 3, length", tr.tokens, len(tr.chunks), tr.finish)
	}
	if tr.usage == nil || tr.usage.CompletionTokens != 7 || tr.usage.PromptTokens != 6 || tr.usage.TotalTokens != 13 {
		t.Errorf("usage %+v, want completion 7, prompt 6 (words of both messages), total 13", tr.usage)
	}
}

func TestCompletionStreamDecodes(t *testing.T) {
	srv, url := newTestServer(t, Config{StepBase: time.Millisecond})
	st, err := newClient(url).CreateCompletionStream(context.Background(), openai.CompletionRequest{
		Model: DefaultModel, Prompt: "a b c", MaxTokens: 5, Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	chunks, words := 0, 0
	var usage *openai.Usage
	finish := ""
	for {
		resp, err := st.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if resp.Usage != nil {
			usage = resp.Usage
		}
		for _, c := range resp.Choices {
			chunks++
			words += countTokens(c.Text)
			if c.FinishReason != "" {
				finish = c.FinishReason
			}
		}
	}
	if chunks != 5 || words != 5 || finish != "length" || usage == nil || usage.CompletionTokens != 5 || usage.PromptTokens != 3 {
		t.Errorf("chunks %d words %d finish %q usage %+v; want 5, 5, length, {3 5}", chunks, words, finish, usage)
	}
	if st := srv.Stats(); st.GenerationTokens != 5 || st.PromptTokens != 3 {
		t.Errorf("stats %+v, want 5 generation and 3 prompt tokens", st)
	}
}

func TestNonStream(t *testing.T) {
	for _, mode := range []Mode{modeBatching, modeFixed} {
		_, url := newTestServer(t, Config{Mode: mode, StepBase: time.Millisecond, TTFT: time.Millisecond, ITL: time.Millisecond})
		c := newClient(url)
		req := chatReq(4, false)
		req.StreamOptions = nil
		resp, err := c.CreateChatCompletion(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if countTokens(resp.Choices[0].Message.Content) != 4 || resp.Usage.CompletionTokens != 4 || resp.Choices[0].FinishReason != "length" {
			t.Errorf("%s chat: %+v", mode, resp)
		}
		cr, err := c.CreateCompletion(context.Background(), openai.CompletionRequest{Model: DefaultModel, Prompt: "x y", MaxTokens: 3})
		if err != nil {
			t.Fatal(err)
		}
		if countTokens(cr.Choices[0].Text) != 3 || cr.Usage.PromptTokens != 2 {
			t.Errorf("%s completion: %+v", mode, cr)
		}
	}
}

// TestStatsCurrentWhenClientDone: once a client has read a whole answer (streamed to [DONE],
// or a plain body), the server's stats already count its tokens and no longer count it as
// running, in both modes: a test or scraper reading /metrics right after never sees a stale
// count. It fails at once on fixed mode freeing the request after [DONE] (its Running was
// stale); the batching engine's ordering (publish before a reader can see its last token) is
// guarded only loosely here: the old window there was microseconds wide.
func TestStatsCurrentWhenClientDone(t *testing.T) {
	for _, mode := range []Mode{modeBatching, modeFixed} {
		srv, url := newTestServer(t, Config{Mode: mode, StepBase: time.Millisecond, TTFT: time.Millisecond, ITL: time.Millisecond,
			OutputDist: outputFixed, OutputTokens: 1000})
		c := newClient(url)
		var want int64
		for i := range 20 {
			if i%2 == 0 {
				tr, err := chatStream(context.Background(), c, chatReq(6, true))
				if err != nil || tr.tokens != 6 {
					t.Fatalf("%s: stream %d: %d tokens, %v", mode, i, tr.tokens, err)
				}
			} else {
				req := chatReq(6, false)
				req.StreamOptions = nil
				if _, err := c.CreateChatCompletion(context.Background(), req); err != nil {
					t.Fatalf("%s: request %d: %v", mode, i, err)
				}
			}
			want += 6
			if st := srv.Stats(); st.Running != 0 || st.GenerationTokens != want {
				t.Fatalf("%s: after request %d: running %d, generation tokens %d; want 0 and %d", mode, i, st.Running, st.GenerationTokens, want)
			}
		}
	}
}

// rawPost posts body and returns the status and the full body.
func rawPost(t *testing.T, url, path, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestErrors(t *testing.T) {
	_, url := newTestServer(t, Config{StepBase: time.Millisecond, MaxModelLen: 100})
	_, err := newClient(url).CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{
		Model: "gpt-nope", Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != 404 {
		t.Errorf("unknown model: %v, want 404 APIError", err)
	}
	for _, tc := range []struct {
		name, path, body string
		want             int
	}{
		{"malformed", "/v1/chat/completions", `{"model": `, 400},
		{"overflow", "/v1/completions", `{"prompt": "` + strings.Repeat("w ", 60) + `", "max_tokens": 41}`, 400},
		{"fits", "/v1/completions", `{"prompt": "` + strings.Repeat("w ", 60) + `", "max_tokens": 40}`, 200},
		{"zero max", "/v1/completions", `{"prompt": "a", "max_tokens": 0}`, 400},
		{"no messages", "/v1/chat/completions", `{"messages": []}`, 400},
		{"ignore_eos", "/v1/completions", `{"prompt": "a", "max_tokens": 9, "ignore_eos": true}`, 200},
	} {
		code, body := rawPost(t, url, tc.path, tc.body)
		if code != tc.want {
			t.Errorf("%s: status %d, want %d: %s", tc.name, code, tc.want, body)
			continue
		}
		if code == 400 {
			var eb struct {
				Error struct {
					Message string `json:"message"`
					Type    string `json:"type"`
					Code    int    `json:"code"`
				} `json:"error"`
			}
			if err := json.Unmarshal(body, &eb); err != nil || eb.Error.Type != "BadRequestError" || eb.Error.Code != 400 || eb.Error.Message == "" {
				t.Errorf("%s: error body %s", tc.name, body)
			}
		}
		if tc.name == "ignore_eos" && !bytes.Contains(body, []byte(`"completion_tokens":9`)) {
			t.Errorf("ignore_eos did not generate max_tokens: %s", body)
		}
	}
	for _, path := range []string{"/v1/models", "/health"} {
		resp, err := http.Get(url + path)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("GET %s: %v %v", path, resp, err)
		}
		if resp != nil {
			resp.Body.Close()
		}
	}
}

// runStreams runs n concurrent chat streams and returns their traces.
func runStreams(t *testing.T, ctx context.Context, c *openai.Client, n, maxTokens int) []streamTrace {
	t.Helper()
	out := make([]streamTrace, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = chatStream(ctx, c, chatReq(maxTokens, true)) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestBatchingGap: for c ≤ S concurrent streams every step produces one token for each, so
// the mean inter-chunk gap is t(c) (package doc ground truth).
func TestBatchingGap(t *testing.T) {
	cfg := Config{MaxNumSeqs: 8, StepBase: 3 * time.Millisecond, StepPerSeq: 500 * time.Microsecond, PrefillTPS: 1e9,
		OutputDist: outputFixed, OutputTokens: 1000} // max_tokens decides every length
	srv, url := newTestServer(t, cfg)
	rc := srv.Config()
	c := newClient(url)
	gaps := map[int]float64{}
	for _, n := range []int{2, 8} {
		traces := runStreams(t, context.Background(), c, n, 40)
		var sum time.Duration
		for _, tr := range traces {
			if tr.tokens != 40 {
				t.Fatalf("c=%d: %d tokens, want 40", n, tr.tokens)
			}
			sum += tr.meanGap()
		}
		mean := sum / time.Duration(n)
		want := rc.StepTime(n, 0)
		gaps[n] = float64(mean) / float64(want)
		// ±15%: wide enough for a loaded 2-core machine under -race; the engine's absolute
		// schedule keeps the mean on time even when single wake-ups are late.
		if r := gaps[n]; r < 0.85 || r > 1.15 {
			t.Errorf("c=%d: mean gap %v, want t(c) = %v within 15%%", n, mean, want)
		}
		t.Logf("c=%d: mean inter-chunk gap %v, t(c) %v", n, mean, want)
	}
}

// TestBatchingQueue: with c > S the extra requests wait; they see their first token only after
// a running request finishes, about one service time later.
func TestBatchingQueue(t *testing.T) {
	const s = 4
	srv, url := newTestServer(t, Config{MaxNumSeqs: s, StepBase: 2 * time.Millisecond, StepPerSeq: 500 * time.Microsecond, PrefillTPS: 1e9,
		OutputDist: outputFixed, OutputTokens: 1000})
	c := newClient(url)
	ctx := context.Background()
	// nA: the A requests run ~0.5 s, far longer than sending the B requests takes on a loaded
	// machine, so no slot frees before the stats are read.
	const nA, nB = 120, 10
	type result struct {
		tr  streamTrace
		err error
	}
	first := make(chan struct{}, 2*s)
	resA := make(chan result, s)
	var wg sync.WaitGroup
	for range s {
		wg.Go(func() {
			tr := streamTrace{sent: time.Now()}
			st, err := c.CreateChatCompletionStream(ctx, chatReq(nA, true))
			if err != nil {
				resA <- result{err: err}
				first <- struct{}{}
				return
			}
			defer st.Close()
			signalled := false
			for {
				resp, err := st.Recv()
				if err != nil {
					if errors.Is(err, io.EOF) {
						err = nil
					}
					if !signalled {
						first <- struct{}{}
					}
					resA <- result{tr: tr, err: err}
					return
				}
				if len(resp.Choices) > 0 && resp.Choices[0].Delta.Content != "" {
					tr.chunks = append(tr.chunks, time.Now())
					if !signalled {
						signalled = true
						first <- struct{}{}
					}
				}
			}
		})
	}
	for range s {
		<-first // every A request holds a slot
	}
	// B requests: CreateChatCompletionStream returns after the role chunk, which the server
	// writes only once the request is queued in the engine.
	streams := make([]*openai.ChatCompletionStream, s)
	sentB := make([]time.Time, s)
	for i := range streams {
		sentB[i] = time.Now()
		st, err := c.CreateChatCompletionStream(ctx, chatReq(nB, true))
		if err != nil {
			t.Fatal(err)
		}
		streams[i] = st
	}
	st := srv.Stats()
	if st.Running != s || st.Waiting != s {
		t.Errorf("stats %+v, want %d running and %d waiting", st, s, s)
	}
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !bytes.Contains(body, []byte(`vllm:num_requests_waiting{model_name="kneecap-sim"} 4`)) {
		t.Errorf("metrics do not show 4 waiting:\n%s", body)
	}
	ttftB := make([]time.Duration, s)
	for i, st := range streams {
		for {
			resp, err := st.Recv()
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Choices) > 0 && resp.Choices[0].Delta.Content != "" {
				ttftB[i] = time.Since(sentB[i])
				break
			}
		}
		for {
			if _, err := st.Recv(); err != nil {
				break
			}
		}
		st.Close()
	}
	wg.Wait()
	close(resA)
	var service time.Duration
	for r := range resA {
		if r.err != nil {
			t.Fatal(r.err)
		}
		service = max(service, r.tr.chunks[len(r.tr.chunks)-1].Sub(r.tr.chunks[0]))
	}
	// A B request waits for the A requests' remaining ~(nA − 1) steps: about one service time.
	for i, d := range ttftB {
		if r := float64(d) / float64(service); r < 0.6 || r > 1.4 {
			t.Errorf("B[%d] TTFT %v, want about one service time %v (0.6–1.4×)", i, d, service)
		}
	}
}

// loopWindow runs a closed loop of conc clients, each asking for out tokens; once every
// client has completed one request (warm) it measures 4 × conc completions and returns the
// server's stats at the window's edges and the window's wall time.
func loopWindow(t *testing.T, srv *Server, url string, conc, out int) (st0, st1 Stats, wall time.Duration) {
	t.Helper()
	c := newClient(url)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{}, 1024)
	var wg sync.WaitGroup
	defer wg.Wait()
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				if _, err := chatStream(ctx, c, chatReq(out, true)); err == nil {
					select {
					case done <- struct{}{}:
					case <-ctx.Done():
					}
				}
			}
		})
	}
	for range conc {
		<-done // warm: every worker has completed one request
	}
	st0, t0 := srv.Stats(), time.Now()
	for range 4 * conc {
		<-done
	}
	st1, t1 := srv.Stats(), time.Now()
	cancel()
	return st0, st1, t1.Sub(t0)
}

// loopTPS is the output tokens per second of loopWindow's window.
func loopTPS(t *testing.T, srv *Server, url string, conc, out int) float64 {
	t.Helper()
	st0, st1, wall := loopWindow(t, srv, url, conc, out)
	return float64(st1.GenerationTokens-st0.GenerationTokens) / wall.Seconds()
}

// TestThroughputFlatBeyondS runs closed loops over HTTP: TPS(2S) ≈ TPS(S).
func TestThroughputFlatBeyondS(t *testing.T) {
	const s, out = 4, 30
	srv, url := newTestServer(t, Config{MaxNumSeqs: s, StepBase: 2 * time.Millisecond, StepPerSeq: 500 * time.Microsecond, PrefillTPS: 1e9})
	tpsS, tps2S := loopTPS(t, srv, url, s, out), loopTPS(t, srv, url, 2*s, out)
	ideal := srv.Config().IdealTPS(s)
	t.Logf("TPS(S)=%.0f TPS(2S)=%.0f ideal %.0f", tpsS, tps2S, ideal)
	// Flat: at 2S the queue hides the client's turnaround that costs TPS(S) a little, so the
	// ratio may exceed 1 by that much (wide for a loaded machine).
	if r := tps2S / tpsS; r < 0.85 || r > 1.35 {
		t.Errorf("TPS(2S)/TPS(S) = %.2f, want flat (0.85–1.35)", r)
	}
	// Client turnaround costs about one step per request: N ÷ (N + 1) of ideal.
	if r := tpsS / ideal; r < 0.7 || r > 1.1 {
		t.Errorf("TPS(S) = %.0f, ideal %.0f: ratio %.2f outside 0.7–1.1", tpsS, ideal, r)
	}
}

// TestFixedMode256: fixed mode keeps its TTFT and ITL at 256 concurrent streams within 5%.
// (ITL 10 ms, or 40 ms under -race). The streams are read with a minimal SSE reader (go-openai decodes chunks in the tests
// above): 256 × 100 chunks/s through JSON decoding under -race would measure the client.
func TestFixedMode256(t *testing.T) {
	const conc = 256
	ttft, itl, n := 100*time.Millisecond, 10*time.Millisecond, 20
	if raceEnabled {
		// 256 × 100 chunks/s saturates two cores under the race detector; 25 chunks/s per
		// stream still holds 256 concurrent streams.
		ttft, itl, n = 200*time.Millisecond, 40*time.Millisecond, 10
	}
	_, url := newTestServer(t, Config{Profile: "fixed", TTFT: ttft, ITL: itl})
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: conc}}
	run := func(tokens int) ([]time.Duration, time.Duration) {
		body := fmt.Sprintf(`{"model":%q,"prompt":"hello world","max_tokens":%d,"stream":true}`, DefaultModel, tokens)
		ttfts := make([]time.Duration, conc)
		gaps := make([]time.Duration, conc)
		errs := make([]error, conc)
		var wg sync.WaitGroup
		for i := range conc {
			wg.Go(func() {
				// Stagger the starts over one TTFT, as independent clients would be, so that
				// 256 requests are not parsed and 256 chunks not due at the same instant. Every
				// stream lasts TTFT + (n−1) × ITL > TTFT, so all 256 are in flight together.
				time.Sleep(time.Duration(i) * ttft / conc)
				sent := time.Now()
				resp, err := hc.Post(url+"/v1/completions", "application/json", strings.NewReader(body))
				if err != nil {
					errs[i] = err
					return
				}
				defer resp.Body.Close()
				ev, done, err := sseTrace(resp)
				if err != nil || !done || len(ev) != tokens {
					errs[i] = fmt.Errorf("stream %d: %d events, done %t, err %v", i, len(ev), done, err)
					return
				}
				ttfts[i] = ev[0].Sub(sent)
				if tokens > 1 {
					gaps[i] = ev[tokens-1].Sub(ev[0]) / time.Duration(tokens-1)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		var sum time.Duration
		for _, g := range gaps {
			sum += g
		}
		slices.Sort(ttfts)
		return ttfts, sum / conc
	}
	run(1) // warm the connection pool so that TTFT does not include 256 simultaneous dials
	s0 := selfcheck.SampleClient()
	ttfts, gap := run(n)
	busy := selfcheck.MachineBusy(selfcheck.SampleClient().Since(s0))
	med := ttfts[len(ttfts)/2]
	t.Logf("256 streams: median TTFT %v (want %v), mean ITL %v (want %v); machine busy: %v", med, ttft, gap, itl, busy)
	// Never early (the engine's schedule is absolute); late by the client's and server's
	// turnaround on a loaded two-core machine, which the race detector slows: up to 25% on
	// TTFT (one delivery), 10% on the mean gap (averaged over the stream). Later still only
	// on a machine whose other work held this process back (the client self-check's run-queue
	// wait, scheduling latency): inconclusive then.
	// A first token held back by the busy machine also makes the mean gap look short: the
	// stream catches up with the absolute schedule after it.
	rt, rg := float64(med)/float64(ttft), float64(gap)/float64(itl)
	off := rt < 0.95 || rt > 1.25 || rg < 0.95 || rg > 1.10
	if off && len(busy) > 0 {
		t.Skipf("median TTFT %v, mean ITL %v: inconclusive, the machine was busy (%s)", med, gap, strings.Join(busy, ", "))
	}
	if rt < 0.95 || rt > 1.25 {
		t.Errorf("median TTFT %v, want %v within -5%%/+25%%", med, ttft)
	}
	if rg < 0.95 || rg > 1.10 {
		t.Errorf("mean ITL %v, want %v within -5%%/+10%%", gap, itl)
	}
}

// sseTrace reads a raw SSE stream: content events, whether [DONE] came, and the read error.
func sseTrace(resp *http.Response) (events []time.Time, done bool, err error) {
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "data: [DONE]":
			done = true
		case strings.Contains(line, `"content":"tok`) || strings.Contains(line, `"text":"tok`):
			events = append(events, time.Now())
		}
	}
	return events, done, sc.Err()
}
