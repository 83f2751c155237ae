package openai

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// streamN serves n content chunks, a usage chunk claiming n tokens and [DONE].
func streamN(t *testing.T, n int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(roleChunk())
		for range n {
			s.data(contentChunk("t"))
		}
		s.data(usageChunk(2, n))
		s.data("[DONE]")
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOverlongChunks: a stream of max_tokens content chunks succeeds; one more is cut as
// overlong, its tokens not believed, whatever its usage says.
func TestOverlongChunks(t *testing.T) {
	t.Parallel()
	for _, maxTokens := range []int{1, 7} {
		for _, extra := range []int{0, 1} {
			cl := newClient(t, streamN(t, maxTokens+extra), nil)
			rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: maxTokens})
			if extra == 0 {
				if !rec.OK() || rec.OutputTokens != maxTokens || !rec.CountsTokens() {
					t.Errorf("max_tokens %d, %d chunks: %s %s (%d tokens), want ok", maxTokens, maxTokens, rec.Status, rec.Error, rec.OutputTokens)
				}
				continue
			}
			if rec.Status != record.StatusError || rec.ErrorClass != record.ErrOverlong || rec.CountsTokens() {
				t.Errorf("max_tokens %d, %d chunks: %s %q (%s), want error overlong", maxTokens, maxTokens+1, rec.Status, rec.ErrorClass, rec.Error)
			}
			want := "more content chunks than max_tokens"
			if !strings.Contains(rec.Error, want) {
				t.Errorf("message %q, want it to contain %q", rec.Error, want)
			}
			if got := record.TokensInWindow(&rec, rec.Sent, rec.Sent+int64(time.Hour), make([]float64, 4)); got != 0 {
				t.Errorf("an overlong stream brings %g tokens to a window, want 0", got)
			}
		}
	}
}

// TestOverlongEndless: the hostile endless stream (content chunks forever, never [DONE]) is cut
// as overlong after max_tokens chunks, long before request_timeout.
func TestOverlongEndless(t *testing.T) {
	t.Parallel()
	_, srv := startHostile(t, func(int64) fault { return faultEndless })
	cl := newClient(t, srv.URL, func(o *Options) { o.RequestTimeout = time.Minute })
	rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 8})
	if rec.ErrorClass != record.ErrOverlong || rec.OutputTokens != 8 {
		t.Errorf("%s %q (%s), %d tokens: want overlong after 8", rec.Status, rec.ErrorClass, rec.Error, rec.OutputTokens)
	}
}

// keepaliveAfter serves one content chunk, then a role chunk (no content) every 5 ms until the
// client goes.
func keepaliveAfter(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(contentChunk("a"))
		tk := time.NewTicker(5 * time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-r.Context().Done():
				return
			case <-tk.C:
				io.WriteString(w, "data: "+roleChunk()+"\n\n")
				s.f.Flush()
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestStreamTimeBound: with the preflight's pace known, a stream that keeps sending
// non-content events after its first token (never past max_tokens chunks) is cut at its time
// bound, class timeout (a slow server is not proven to ignore max_tokens), its message naming
// the bound; without a pace, request_timeout ends it.
func TestStreamTimeBound(t *testing.T) {
	t.Parallel()
	url := keepaliveAfter(t)
	const ttft = 100 * time.Millisecond // no stall_timeout: the keepalives would stall it
	for _, pace := range []time.Duration{0, time.Millisecond} {
		cl := newClient(t, url, func(o *Options) { o.RequestTimeout, o.TTFTTimeout = 700*time.Millisecond, ttft })
		cl.SetPace(pace)
		cl.boundSlack = 0
		start := time.Now()
		rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 1})
		el := time.Since(start)
		if pace == 0 {
			if rec.ErrorClass != record.ErrTimeout || strings.Contains(rec.Error, "stream bound") {
				t.Errorf("no pace: %q (%s), want request_timeout's timeout", rec.ErrorClass, rec.Error)
			}
			continue
		}
		// 1 token at 20 × the 10 ms floor, plus ttft_timeout.
		bound := overlongFactor*minPace + ttft
		if rec.ErrorClass != record.ErrTimeout || !strings.Contains(rec.Error, "stream bound: still streaming "+bound.String()) {
			t.Errorf("pace %v: %q (%s), want timeout naming the stream bound %v", pace, rec.ErrorClass, rec.Error, bound)
		}
		if el < bound {
			t.Errorf("cut after %v, before its bound %v", el, bound)
		}
	}
}

// TestStreamBoundSlack: with ttft_timeout and stall_timeout off, a stream's time bound still
// adds minBoundSlack to its tokens' time, so that a max_tokens 1 request is not cut at 200 ms.
func TestStreamBoundSlack(t *testing.T) {
	t.Parallel()
	cl := newClient(t, "http://127.0.0.1:1", func(o *Options) { o.TTFTTimeout, o.StallTimeout = 0, 0 })
	cl.SetPace(time.Millisecond)
	if got, want := cl.streamBound(&record.Request{MaxTokens: 1}), overlongFactor*minPace+minBoundSlack; got != want {
		t.Errorf("bound %v, want %v", got, want)
	}
}

// TestStallKeepalives: after the first token, events without content (keepalives, role or
// usage chunks) do not hold off stall_timeout.
func TestStallKeepalives(t *testing.T) {
	t.Parallel()
	cl := newClient(t, keepaliveAfter(t), func(o *Options) { o.RequestTimeout, o.StallTimeout = 30*time.Second, 100*time.Millisecond })
	rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4})
	if rec.ErrorClass != record.ErrTimeout || !strings.Contains(rec.Error, "no content chunk for stall_timeout") {
		t.Errorf("%q (%s), want a stall timeout", rec.ErrorClass, rec.Error)
	}
}

// TestAnswerBudget plays the servers that never answer against requests carrying an answer
// budget of 200 ms and a ttft_timeout of a minute: each is cut at the budget's deadline, class
// timeout, its message naming the budget and what had arrived. A budget already answered (by
// another request) cuts nothing: ttft_timeout does. A healthy stream answers the budget.
func TestAnswerBudget(t *testing.T) {
	t.Parallel()
	hostileURL := func(f fault) func(testing.TB) string {
		return func(t testing.TB) string {
			_, srv := startHostile(t, func(int64) fault { return f })
			return srv.URL
		}
	}
	const budget = 200 * time.Millisecond
	for _, c := range []struct {
		name string
		url  func(testing.TB) string
		msg  string
	}{
		{"accepts and never answers", silentListener, "the server accepted the connection and sent nothing"},
		{"reads and never answers", hostileURL(faultSilent), "the server accepted the connection and sent nothing"},
		{"headers then nothing", hostileURL(faultNoToken), "the response began and streamed no content"},
		{"drips a byte a second", hostileURL(faultTrickle), "the response began and streamed no content"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, answered := range []bool{false, true} {
				cl := newClient(t, c.url(t), func(o *Options) { o.TTFTTimeout = time.Minute })
				ttft := time.Duration(0)
				if answered {
					ttft = budget * 2 // the budget no longer cuts: ttft_timeout does
					cl.opts.TTFTTimeout = ttft
				}
				b := record.NewAnswerBudget(time.Now(), budget*10/9)
				if answered {
					b.Answer()
				}
				start := time.Now()
				rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4, Budget: b})
				el := time.Since(start)
				want := "no answer within target.answer_budget"
				if c.msg != "the server accepted the connection and sent nothing" {
					want = "no token within target.answer_budget"
				}
				after := budget
				if answered {
					want, after = "within ttft_timeout "+ttft.String(), ttft
				}
				if rec.ErrorClass != record.ErrTimeout || !strings.Contains(rec.Error, want) || !strings.Contains(rec.Error, c.msg) {
					t.Errorf("answered %v: %q (%s), want timeout naming %q and %q", answered, rec.ErrorClass, rec.Error, want, c.msg)
				}
				if el < after-10*time.Millisecond || el > after+timeoutSlack {
					t.Errorf("answered %v: Do returned after %v, want about %v", answered, el, after)
				}
			}
		})
	}
	t.Run("a stream answers it", func(t *testing.T) {
		t.Parallel()
		b := record.NewAnswerBudget(time.Now(), time.Minute)
		rec := do(t, newClient(t, streamN(t, 3), nil), record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 3, Budget: b})
		if !rec.OK() || !b.Answered() {
			t.Errorf("%s %s, answered %v: want ok, answered", rec.Status, rec.Error, b.Answered())
		}
	})
}
