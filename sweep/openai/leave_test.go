package openai

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
)

// startEngine serves the simulator's batching engine (one token per sequence a step, one
// token a chunk) over loopback and returns it with its URL.
func startEngine(t *testing.T) (*sim.Server, string) {
	t.Helper()
	cfg, err := sim.Profile(sim.ProfileDemo)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxNumSeqs, cfg.StepBase, cfg.StepPerSeq, cfg.TokensPerChunk = 4, 2*time.Millisecond, 0, 1
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return s, srv.URL
}

// awaitIdle waits, at most 10 s, until the simulator runs no request; it returns its stats.
func awaitIdle(t *testing.T, s *sim.Server) sim.Stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		st := s.Stats()
		if st.Running == 0 && st.Waiting == 0 {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("the simulator still runs %d requests (%d waiting): the client's leaving did not free them", st.Running, st.Waiting)
		}
		time.Sleep(time.Millisecond) // polling the server's state: no order to wait for
	}
}

// checkUserCancel checks the record of a request the user left: cancelled with class
// user_cancel and no error text, its N_out the content chunks it received, its E2E the last
// one's arrival.
func checkUserCancel(t *testing.T, rec *record.Record) {
	t.Helper()
	if rec.Status != record.StatusCancelled || rec.ErrorClass != record.ErrUserCancel || rec.Error != "" || !rec.UserCancelled() {
		t.Fatalf("record %s/%s %q, want cancelled/user_cancel with no error text", rec.Status, rec.ErrorClass, rec.Error)
	}
	if rec.OutputTokens != len(rec.Chunks) || rec.TokensSource != record.TokensFromChunks {
		t.Errorf("output tokens %d (%s), want the %d chunks received", rec.OutputTokens, rec.TokensSource, len(rec.Chunks))
	}
	if n := len(rec.Chunks); n > 0 && (rec.TTFT <= 0 || rec.E2E.Microseconds() != rec.Chunks[n-1]) {
		t.Errorf("TTFT %v E2E %v, want E2E at the last chunk's %d µs", rec.TTFT, rec.E2E, rec.Chunks[n-1])
	}
}

// TestUserCancelAfterTokens: a request cancelled after 8 content chunks keeps exactly those 8
// as its output; the simulator sees the client leave, frees the slot and generates no more
// than the cancelled request was granted while it ran; the connection is closed, not
// pooled, so the next request dials.
func TestUserCancelAfterTokens(t *testing.T) {
	s, url := startEngine(t)
	c := newClient(t, url, func(o *Options) { o.Model = sim.DefaultModel })
	const n, maxTokens = 8, 2000 // 2000 steps of 2 ms: 4 s the slot would stay busy
	rec := do(t, c, record.Request{Prompt: "one two three", PromptTokens: 3, MaxTokens: maxTokens, IgnoreEOS: true,
		Cancel: &record.Cancel{AfterTokens: n}})
	checkUserCancel(t, &rec)
	if rec.OutputTokens != n {
		t.Errorf("output tokens %d, want %d", rec.OutputTokens, n)
	}
	st := awaitIdle(t, s)
	if st.GenerationTokens >= maxTokens {
		t.Errorf("the simulator generated %d tokens, the whole request: it never freed the slot", st.GenerationTokens)
	}
	next := do(t, c, record.Request{Prompt: "one two three", PromptTokens: 3, MaxTokens: 4, IgnoreEOS: true})
	if !next.OK() || !next.Dialed {
		t.Errorf("next request %s, dialed %v: want ok on a new connection (the cancelled one closed)", next.Status, next.Dialed)
	}
}

// TestUserCancelAfterDuration: a request cancelled 60 ms after its send, long before its
// 2000 tokens (4 s) end, is a user cancel with the chunks it had, ends no sooner than 60 ms
// after its send, and frees the slot.
func TestUserCancelAfterDuration(t *testing.T) {
	s, url := startEngine(t)
	c := newClient(t, url, func(o *Options) { o.Model = sim.DefaultModel; o.StallTimeout = 5 * time.Second })
	const maxTokens = 2000
	rec := do(t, c, record.Request{Prompt: "one two three", PromptTokens: 3, MaxTokens: maxTokens, IgnoreEOS: true,
		Cancel: &record.Cancel{After: 60 * time.Millisecond}})
	checkUserCancel(t, &rec)
	if rec.OutputTokens <= 0 || rec.OutputTokens >= maxTokens {
		t.Errorf("output tokens %d, want some of the %d", rec.OutputTokens, maxTokens)
	}
	// A lower bound: the cancel counts from t_send. End is measured from the send's kernel
	// transmit stamp when there is one, a few µs off the client's clock that arms the cancel
	// (59.998 ms was seen): 1 ms of tolerance.
	if rec.End < 59*time.Millisecond {
		t.Errorf("end %v, want the cancel at least 60 ms (less 1 ms of clock tolerance) after the send", rec.End)
	}
	if st := awaitIdle(t, s); st.GenerationTokens >= maxTokens {
		t.Errorf("the simulator generated %d tokens: it never freed the slot", st.GenerationTokens)
	}
}

// TestUserCancelAfterTheEnd: a stream that ends before its cancel point is an ordinary
// successful request.
func TestUserCancelAfterTheEnd(t *testing.T) {
	_, url := startEngine(t)
	c := newClient(t, url, func(o *Options) { o.Model = sim.DefaultModel })
	for _, cancel := range []record.Cancel{{AfterTokens: 11}, {After: time.Hour}} {
		rec := do(t, c, record.Request{Prompt: "one two three", PromptTokens: 3, MaxTokens: 10, IgnoreEOS: true, Cancel: &cancel})
		if !rec.OK() || rec.OutputTokens != 10 || rec.TokensSource != record.TokensFromUsage {
			t.Errorf("cancel %+v: %s %s, %d tokens (%s); want ok with the 10 of its usage", cancel, rec.Status, rec.Error,
				rec.OutputTokens, rec.TokensSource)
		}
	}
}

// TestUserCancelAfterFromSend: the duration rule counts from t_send (GotConn), not from the
// request's start. With one connection to the host, a request that waits 3 × After for it
// behind another (held by the server until a timer of 3 × After releases it) still gets its
// connection, then leaves After later while the server holds its response headers: a user
// cancel with TTFT 0 and no tokens, not an error, whose End (from t_send) is at least After.
// Lower bounds only: a slow machine makes every wait longer.
func TestUserCancelAfterFromSend(t *testing.T) {
	const after = 50 * time.Millisecond
	first, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		isFirst := false
		once.Do(func() { isFirst = true })
		if !isFirst {
			_, _ = io.Copy(io.Discard, r.Body) // the server sees the client go once the body is read
			<-r.Context().Done()               // hold the headers until the client leaves
			return
		}
		close(first)
		<-release
		s := newSSE(w)
		s.data(contentChunk("a"))
		s.data(usageChunk(2, 1))
		s.data("[DONE]")
	}))
	t.Cleanup(srv.Close)
	c := newClient(t, srv.URL, nil)
	c.transport.MaxConnsPerHost = 1

	held := make(chan record.Record, 1)
	go func() { held <- do(t, c, record.Request{Prompt: "hi there", PromptTokens: 2, MaxTokens: 1}) }()
	<-first // the one connection is taken
	timer := time.AfterFunc(3*after, func() { close(release) })
	defer timer.Stop()
	rec := do(t, c, record.Request{Prompt: "hi there", PromptTokens: 2, MaxTokens: 100, Cancel: &record.Cancel{After: after}})
	if h := <-held; !h.OK() {
		t.Errorf("the request that held the connection: %s %s", h.Status, h.Error)
	}
	if rec.Status != record.StatusCancelled || rec.ErrorClass != record.ErrUserCancel || rec.Error != "" {
		t.Fatalf("record %s/%s %q, want cancelled/user_cancel with no error text", rec.Status, rec.ErrorClass, rec.Error)
	}
	if rec.TTFT != 0 || rec.OutputTokens != 0 || len(rec.Chunks) != 0 {
		t.Errorf("TTFT %v, %d tokens, %d chunks: want none before the headers", rec.TTFT, rec.OutputTokens, len(rec.Chunks))
	}
	if rec.ConnWait < 2*after || rec.End < after {
		t.Errorf("conn wait %v, end %v: want the pool wait (≥ %v) before the send and the cancel ≥ %v after it", rec.ConnWait, rec.End, 2*after, after)
	}
}
