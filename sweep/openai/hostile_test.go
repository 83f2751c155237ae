package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/sim"
)

// fault is one misbehaviour of the hostile server.
type fault string

// Faults the hostile server can play; faultNone delegates to the real simulator.
const (
	faultNone        fault = "none"
	fault401         fault = "401"           // JSON error body
	fault404Model    fault = "404-model"     // vLLM's unknown-model answer
	fault429         fault = "429"           // rate limit with Retry-After
	fault500         fault = "500"           // JSON error body
	fault503         fault = "503"           // plain-text body
	faultHTML502     fault = "502-html"      // a proxy's HTML error page
	faultDisconnect  fault = "disconnect"    // two chunks, then the TCP connection is cut
	faultBadJSON     fault = "bad-json"      // a truncated chunk
	faultStreamError fault = "stream-error"  // an error object inside a 200 stream
	faultHugeLine    fault = "10MiB-line"    // one 10 MiB line without a newline in the stream
	faultEndless     fault = "endless"       // content chunks forever, never [DONE]
	faultSilent      fault = "silent"        // reads the request, never answers
	faultTrickle     fault = "trickle"       // a valid stream at 1 byte/s
	faultEmpty       fault = "empty"         // role chunk, usage 0, [DONE]: no content
	faultNoDone      fault = "no-done"       // content, then a clean end without [DONE]
	faultKeepAlive   fault = "comment-flood" // SSE comment lines forever, no data
	faultNoToken     fault = "no-token"      // headers and a role chunk, then nothing
	faultStall       fault = "stall"         // one content chunk, then nothing
	faultDoneOpen    fault = "done-open"     // content and [DONE], but the chunked body never ends

	// Redirects of each code: to another origin (the hostile server's companion), or to the
	// same origin (a path of the hostile server itself that serves the simulator).
	faultRedirect301     fault = "301-other-origin"
	faultRedirect302     fault = "302-other-origin"
	faultRedirect303     fault = "303-other-origin"
	faultRedirect307     fault = "307-other-origin"
	faultRedirect308     fault = "308-other-origin"
	faultRedirect301Same fault = "301-same-origin"
	faultRedirect302Same fault = "302-same-origin"
	faultRedirect303Same fault = "303-same-origin"
	faultRedirect307Same fault = "307-same-origin" // followed: method and body kept
	faultRedirect308Same fault = "308-same-origin" // followed
)

// redirects are the redirect faults: their code and whether they stay on the same origin.
var redirects = map[fault]struct {
	code int
	same bool
}{
	faultRedirect301: {301, false}, faultRedirect302: {302, false}, faultRedirect303: {303, false},
	faultRedirect307: {307, false}, faultRedirect308: {308, false},
	faultRedirect301Same: {301, true}, faultRedirect302Same: {302, true}, faultRedirect303Same: {303, true},
	faultRedirect307Same: {307, true}, faultRedirect308Same: {308, true},
}

// movedPrefix starts the path a same-origin redirect points at: the simulator behind it.
const movedPrefix = "/moved"

// hugeLine is the size of faultHugeLine's line, in bytes.
const hugeLine = 10 << 20

// hostile is an OpenAI-compatible loopback server that answers each POST according to pick
// (called with the 0-based request number) and serves the real simulator for faultNone.
// GET /v1/models lists the simulator's model. It counts the faults it played.
type hostile struct {
	sim  *sim.Server
	pick func(n int64) fault
	// echo, when set, is put into every error body along with the Authorization header the
	// client sent (a server that echoes credentials).
	echo bool
	// other is another origin (another port of the host) that redirects point at; it counts
	// the requests it receives in otherHits (there must be none).
	other     *httptest.Server
	otherHits atomic.Int64

	n      atomic.Int64
	mu     sync.Mutex
	played map[fault]int
}

// junk is a 64 KiB block of bytes without a newline, written repeatedly by faultHugeLine.
var junk = bytes.Repeat([]byte("x"), 64<<10)

// startHostile serves a hostile server over loopback HTTP. The simulator behind it is the
// fixed-mode engine (TTFT 5 ms, one token every 1 ms).
func startHostile(t testing.TB, pick func(n int64) fault) (*hostile, *httptest.Server) {
	t.Helper()
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT = 5 * time.Millisecond
	cfg.ITL = time.Millisecond
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &hostile{sim: s, pick: pick, played: map[fault]int{}}
	h.other = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.otherHits.Add(1)
		h.sim.ServeHTTP(w, r)
	}))
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		h.other.Close()
		s.Close()
		if n := h.otherHits.Load(); n > 0 {
			t.Errorf("the other origin received %d requests: a redirect was followed to it", n)
		}
	})
	return h, srv
}

func (h *hostile) count(f fault) {
	h.mu.Lock()
	h.played[f]++
	h.mu.Unlock()
}

// counts returns a copy of the faults played so far.
func (h *hostile) counts() map[fault]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[fault]int, len(h.played))
	for k, v := range h.played {
		out[k] = v
	}
	return out
}

// ServeHTTP answers the n-th POST with the fault pick(n) gives (the simulator's answer for
// faultNone) and every other request with the simulator's.
func (h *hostile) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p, ok := strings.CutPrefix(r.URL.Path, movedPrefix); ok {
		r.URL.Path = p // the target of a same-origin redirect
		h.sim.ServeHTTP(w, r)
		return
	}
	if r.Method != http.MethodPost {
		h.sim.ServeHTTP(w, r)
		return
	}
	f := h.pick(h.n.Add(1) - 1)
	h.count(f)
	if f == faultNone {
		h.sim.ServeHTTP(w, r)
		return
	}
	if rd, ok := redirects[f]; ok {
		to := h.other.URL + r.URL.Path
		if rd.same {
			to = movedPrefix + r.URL.Path
		}
		http.Redirect(w, r, to, rd.code) // before the body is read: 307 and 308 resend it
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	echo := ""
	if h.echo {
		echo = " (you sent " + r.Header.Get("Authorization") + ")"
	}
	if !replyError(w, f, echo) {
		streamFault(r.Context(), w, f, echo)
	}
}

// replyError answers with fault f if it is an HTTP error status, and reports whether it was;
// echo is appended to the message.
func replyError(w http.ResponseWriter, f fault, echo string) bool {
	jsonErr := func(code int, typ, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		fmt.Fprintf(w, `{"error":{"message":%q,"type":%q,"code":%d}}`, msg+echo, typ, code)
	}
	switch f {
	case fault401:
		jsonErr(401, "invalid_api_key", "Incorrect API key provided")
	case fault404Model:
		jsonErr(404, "NotFoundError", "The model `nope` does not exist.")
	case fault429:
		w.Header().Set("Retry-After", "1")
		jsonErr(429, "rate_limit_exceeded", "Rate limit reached")
	case fault500:
		jsonErr(500, "InternalServerError", "engine crashed")
	case fault503:
		w.WriteHeader(503)
		io.WriteString(w, "upstream connect error or disconnect/reset before headers"+echo)
	case faultHTML502:
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(502)
		io.WriteString(w, "<html><head><title>502 Bad Gateway</title></head><body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center>"+echo+"</body></html>\n")
	default:
		return false
	}
	return true
}

// streamFault plays fault f, one that starts as a 200 response or never answers, until ctx
// ends where the fault is endless; echo is appended to error messages.
func streamFault(ctx context.Context, w http.ResponseWriter, f fault, echo string) {
	sse := func() *sse { return newSSE(w) }
	switch f {
	case faultDisconnect:
		s := sse()
		s.data(roleChunk())
		s.data(contentChunk("a"))
		s.data(contentChunk("b"))
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	case faultBadJSON:
		s := sse()
		s.data(contentChunk("a"))
		s.data(`{"id":"x","choices":[{"delta":{"content":"b"`)
		s.data("[DONE]")
	case faultStreamError:
		s := sse()
		s.data(contentChunk("a"))
		s.data(fmt.Sprintf(`{"error":{"object":"error","message":%q,"type":"InternalServerError","code":500}}`, "engine dead"+echo))
		s.data("[DONE]")
	case faultHugeLine:
		s := sse()
		s.data(contentChunk("a"))
		io.WriteString(w, "data: ")
		for written := 0; written < hugeLine; written += len(junk) {
			if _, err := w.Write(junk); err != nil {
				return // the client gave up, as it should
			}
		}
		io.WriteString(w, "\n\n")
		s.data("[DONE]")
	case faultEndless:
		s := sse()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.data(contentChunk("z"))
			}
		}
	case faultKeepAlive:
		s := sse()
		// A burst past go-openai's limit of 300 non-data lines first: at one line per tick the
		// limit took ~150 ms of ticks, which a starved machine stretched past faultTimeout
		// (the record then said timeout, not bad_chunk).
		io.WriteString(w, strings.Repeat(": keep-alive\n\n", 400))
		s.f.Flush()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				io.WriteString(w, ": keep-alive\n\n")
				s.f.Flush()
			}
		}
	case faultSilent:
		<-ctx.Done()
	case faultTrickle:
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		body := "data: " + contentChunk("a") + "\n\ndata: [DONE]\n\n"
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for i := 0; i < len(body); i++ {
			w.Write([]byte{body[i]})
			w.(http.Flusher).Flush()
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	case faultEmpty:
		s := sse()
		s.data(roleChunk())
		s.data(usageChunk(3, 0))
		s.data("[DONE]")
	case faultNoDone:
		s := sse()
		s.data(contentChunk("a"))
		s.data(contentChunk("b"))
	case faultNoToken:
		sse().data(roleChunk())
		<-ctx.Done()
	case faultStall:
		s := sse()
		s.data(roleChunk())
		s.data(contentChunk("a"))
		<-ctx.Done()
	case faultDoneOpen:
		s := sse()
		s.data(contentChunk("a"))
		s.data(contentChunk("b"))
		s.data(usageChunk(3, 2))
		s.data("[DONE]")
		<-ctx.Done() // the handler does not return: the chunked body never gets its terminator
	default:
		panic("hostile: unknown fault " + string(f))
	}
}

// silentListener accepts TCP connections and never reads or writes: a server that accepts
// and never answers at the transport level. It returns the base URL and stops on cleanup.
func silentListener(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		wg    sync.WaitGroup
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return "http://" + ln.Addr().String()
}

// closedPort returns the base URL of a loopback port nothing listens on.
func closedPort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
