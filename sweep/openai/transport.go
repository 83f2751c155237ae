package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strconv"
	"time"

	"github.com/kneecap/kneecap/redact"
)

// Stream limits and failures surfaced as errors by sseBody.next and Client.Do.
var (
	errLineTooLong    = errors.New("openai: stream line too long")
	errNonDataTooLong = errors.New("openai: too many non-data stream bytes")
	errBodyTooLarge   = errors.New("openai: response body too large")
	errBadChunk       = errors.New("openai: bad chunk")
	errNoDone         = errors.New("openai: stream ended without data: [DONE]")
	errNoTerminal     = errors.New("openai: stream ended without its terminal event")
	errNoEventBody    = errors.New("openai: the stream's response has no event body")
)

// doer is the HTTPDoer given to go-openai: it merges the extra body into JSON requests,
// retries once on a fresh connection a request whose reused connection failed before any
// response byte, and bounds every response body. A measured 2xx answer is handed to the
// adapter: a stream as an sseBody, a whole JSON body (embeddings) read into the request's
// state (reqState.readWhole).
type doer struct {
	hc *http.Client
	// fresh sends the retry: its transport keeps no connection, so each request dials one.
	fresh *http.Client
	opts  *Options
	extra map[string]json.RawMessage // Options.ExtraBody, each value encoded once by New
}

// Do implements goopenai.HTTPDoer.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	st, _ := req.Context().Value(stateKey{}).(*reqState)
	if req.Body != nil && req.Method == http.MethodPost && (len(d.extra) > 0 || (st != nil && st.ignoreEOS)) {
		if err := d.mergeBody(req, st); err != nil {
			return nil, err
		}
	}
	stream := req.Header.Get("Accept") == "text/event-stream"
	whole := st != nil && st.whole
	if stream || whole {
		req.Header["Accept-Encoding"] = identity // notstream.go
	}
	if st != nil {
		st.sentBytes = int(req.ContentLength)
		st.wireBytes = wireBytes(req, d.opts.Header)
	}
	resp, err := d.hc.Do(req)
	if err != nil && st != nil && st.staleConn() && req.Context().Err() == nil {
		// The server closed a pooled keep-alive connection (llama.cpp's llama-server does after
		// every stream while it advertises keep-alive) and net/http does not retry a POST. The
		// request never reached a server that answered it: send it again, once, on a
		// connection of its own (DESIGN §7).
		if retry, ok := rewind(req); ok {
			st.retried = true
			resp, err = d.fresh.Do(retry)
		}
	}
	if err != nil {
		return nil, err
	}
	if st != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		st.retryAfter = retryAfter(resp.Header.Get("Retry-After"), time.Now())
	}
	if (stream || whole) && resp.StatusCode >= 300 && resp.StatusCode < 400 {
		// A redirect net/http did not follow (300, 304, a 302 without Location …) is its final
		// answer, and go-openai takes every status below 400 for a success: for a stream
		// request it is a redirect not followed.
		_ = resp.Body.Close()
		loc := "nowhere"
		if l := resp.Header.Get("Location"); l != "" {
			loc = redact.URL(l)
		}
		why := "(a stream request answered without a stream)"
		if whole {
			why = "(an embeddings request answered without its embeddings)"
		}
		return nil, &redirectError{code: resp.StatusCode, location: loc, why: why}
	}
	ok := resp.StatusCode >= 200 && resp.StatusCode < 300
	if ok && (stream || whole) {
		// Only a success's body is read as the answer (an error's is read as a message).
		if err := encodedBody(resp); err != nil {
			_ = resp.Body.Close()
			return nil, err
		}
	}
	switch {
	case whole && ok:
		if err := st.readWhole(resp, d.opts.MaxBodyBytes); err != nil {
			return nil, err
		}
	case stream && ok:
		b := newSSEBody(resp.Body, d.opts.MaxLineBytes, d.opts.MaxNonDataBytes)
		b.ctype = resp.Header.Get("Content-Type")
		resp.Body = b
		if st != nil {
			st.body = b
		}
	default:
		resp.Body = &limitedBody{rc: resp.Body, left: d.opts.MaxBodyBytes}
	}
	return resp, nil
}

// wireBytes estimates the bytes req takes on the wire (whether its send is timestamped
// depends on it, stampConn.beginRequest): its body, its headers and the extra ones the
// client's transport adds, and 256 for the request line and the headers net/http adds.
func wireBytes(req *http.Request, extra http.Header) int {
	n := 256 + len(req.URL.RequestURI()) + len(req.Host) + max(int(req.ContentLength), 0)
	for _, h := range [...]http.Header{req.Header, extra} {
		for k, vs := range h {
			for _, v := range vs {
				n += len(k) + len(v) + 4
			}
		}
	}
	return n
}

// mergeBody rewrites req's JSON object body with the extra fields: Options.ExtraBody, then,
// when the request asks for ignore_eos, "ignore_eos": true and "min_tokens": max_tokens.
func (d *doer) mergeBody(req *http.Request, st *reqState) error {
	raw, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return fmt.Errorf("openai: merge extra body: read: %w", err)
	}
	if len(d.extra) == 0 && st != nil && st.ignoreEOS {
		if out, ok := appendIgnoreEOS(raw, st.maxTokens); ok {
			setBody(req, out)
			return nil
		}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("openai: merge extra body: decode request: %w", err)
	}
	maps.Copy(obj, d.extra)
	if st != nil && st.ignoreEOS {
		obj["ignore_eos"] = json.RawMessage("true")
		if st.maxTokens > 0 {
			obj["min_tokens"] = json.RawMessage(fmt.Appendf(nil, "%d", st.maxTokens))
		}
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("openai: merge extra body: encode: %w", err)
	}
	setBody(req, out)
	return nil
}

// rewind returns a copy of req with its body from the start; ok is false when the body
// cannot be read again.
func rewind(req *http.Request) (*http.Request, bool) {
	out := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, false
		}
		b, err := req.GetBody()
		if err != nil {
			return nil, false
		}
		out.Body = b
	}
	return out, true
}

// setBody makes out req's body.
func setBody(req *http.Request, out []byte) {
	req.Body = io.NopCloser(bytes.NewReader(out))
	req.ContentLength = int64(len(out))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
}

// appendIgnoreEOS adds "ignore_eos": true and "min_tokens": maxTokens (when > 0) to the JSON
// object raw that go-openai wrote, by appending them before its closing brace: the per-request
// path skips a decode into a map and an encode. ok is false, and raw is left alone, when raw
// is not a non-empty object or already names either field.
func appendIgnoreEOS(raw []byte, maxTokens int) (out []byte, ok bool) {
	body := bytes.TrimRight(raw, " \t\r\n")
	if len(body) < 2 || body[0] != '{' || body[len(body)-1] != '}' ||
		len(bytes.TrimSpace(body[1:len(body)-1])) == 0 ||
		bytes.Contains(body, []byte(`"ignore_eos"`)) || bytes.Contains(body, []byte(`"min_tokens"`)) {
		return raw, false
	}
	out = make([]byte, 0, len(body)+48)
	out = append(out, body[:len(body)-1]...)
	out = append(out, `,"ignore_eos":true`...)
	if maxTokens > 0 {
		out = append(out, `,"min_tokens":`...)
		out = strconv.AppendInt(out, int64(maxTokens), 10)
	}
	return append(out, '}'), true
}

// limitedBody fails reads past a byte budget instead of truncating silently.
type limitedBody struct {
	rc   io.ReadCloser
	left int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		return 0, errBodyTooLarge
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.rc.Read(p)
	b.left -= int64(n)
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
