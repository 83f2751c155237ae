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
	"strings"
)

// Stream limits surfaced as errors by sseBody.Read.
var (
	errLineTooLong    = errors.New("openai: stream line too long")
	errNonDataTooLong = errors.New("openai: too many non-data stream bytes")
	errBodyTooLarge   = errors.New("openai: response body too large")
	errBadChunk       = errors.New("openai: bad chunk")
	errNoDone         = errors.New("openai: stream ended without data: [DONE]")
)

// doer is the HTTPDoer given to go-openai: it merges the extra body into JSON requests,
// retries once on a fresh connection a request whose reused connection failed before any
// response byte, and bounds every response body.
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
	if st != nil {
		st.sentBytes = int(req.ContentLength)
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
	if resp.StatusCode >= 200 && resp.StatusCode < 300 && req.Header.Get("Accept") == "text/event-stream" {
		b := &sseBody{rc: resp.Body, maxLine: d.opts.MaxLineBytes, maxNonData: d.opts.MaxNonDataBytes}
		resp.Body = b
		if st != nil {
			st.body = b
		}
	} else {
		resp.Body = &limitedBody{rc: resp.Body, left: d.opts.MaxBodyBytes}
	}
	return resp, nil
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

// headLen is how many leading bytes of each line sseBody keeps to recognise "data: [DONE]"
// and go-openai's in-stream error prefix.
const headLen = 32

// errorPrefix is the start of a data payload that go-openai's stream reader treats as an
// in-stream error (its regexp `^data:\s*{"error":` on the trimmed line): it then reads one
// more line before it returns the error, so the separator after such a line must reach it.
const errorPrefix = `{"error":`

// sseBody watches a server-sent-events body as go-openai reads it: it caps line length and
// non-data bytes, notes whether the terminal "data: [DONE]" line arrived, and drops the blank
// line that ends each event after a data line. It costs one IndexByte scan per line and
// allocates nothing.
//
// Dropping the separator halves the lines go-openai's reader handles (each costs it a
// ReadBytes allocation, two regexp matches and a write to its error accumulator) and does not
// change what it returns: it reads line by line, returns each "data:" line on its own and
// treats a blank line as an empty message that it skips. Only the first blank line after a
// data line is dropped (a run of blank lines still reaches go-openai, which counts them
// against its empty-message limit), and never after a data line that may carry go-openai's
// error prefix, because go-openai reads one line past such a line before it reports the
// error, and must not wait for a later event to do so.
type sseBody struct {
	rc         io.ReadCloser
	maxLine    int
	maxNonData int

	lineLen int           // bytes of the current line so far
	started bool          // the current line has a byte other than ASCII white space
	tail    int           // bytes of the current line from its first such byte on
	head    [headLen]byte // the first headLen bytes of the tail
	nonData int
	sawDone bool
	dropSep bool // the previous line was a data line whose separator may be dropped
	err     error
}

func (b *sseBody) Read(p []byte) (int, error) {
	for {
		if b.err != nil {
			return 0, b.err
		}
		n, err := b.rc.Read(p)
		kept := b.scan(p[:n])
		if errors.Is(err, io.EOF) && b.lineLen > 0 {
			b.endLine() // a last line without '\n'
		}
		if b.err != nil {
			return kept, b.err
		}
		// A read of nothing but dropped separators reads on: (0, nil) would count as no
		// progress to the bufio.Reader above.
		if kept > 0 || n == 0 || err != nil {
			return kept, err
		}
	}
}

// scan advances the line state over p, removes the separators it drops, and returns the
// number of bytes kept, moved to the front of p.
func (b *sseBody) scan(p []byte) int {
	r, w := 0, 0 // read and write positions in p
	for r < len(p) && b.err == nil {
		if b.dropSep && b.lineLen == 0 {
			b.dropSep = false
			switch {
			case p[r] == '\n':
				r++
				continue
			case p[r] == '\r' && r+1 < len(p) && p[r+1] == '\n':
				r += 2
				continue
			}
			// Not a separator, or one split across reads: pass it on.
		}
		i := bytes.IndexByte(p[r:], '\n')
		seg := p[r:]
		if i >= 0 {
			seg = p[r : r+i]
		}
		h := seg
		if !b.started {
			h = bytes.TrimLeft(seg, asciiSpace)
			b.started = len(h) > 0
		}
		if b.tail < headLen {
			copy(b.head[b.tail:], h)
		}
		b.tail += len(h)
		b.lineLen += len(seg)
		if b.lineLen > b.maxLine {
			b.err = fmt.Errorf("%w: over %d bytes", errLineTooLong, b.maxLine)
			return w
		}
		k := len(seg)
		if i >= 0 {
			k++
		}
		if w != r {
			copy(p[w:], p[r:r+k])
		}
		w += k
		r += k
		if i < 0 {
			break
		}
		b.endLine()
	}
	return w
}

// endLine classifies the finished line from its head and resets the line state.
func (b *sseBody) endLine() {
	whole := b.tail <= headLen // the head holds the whole line after its leading white space
	line := bytes.TrimSpace(b.head[:min(b.tail, headLen)])
	b.dropSep = false
	if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		if whole && string(bytes.TrimSpace(rest)) == "[DONE]" {
			b.sawDone = true
		}
		b.dropSep = !mayBeErrorLine(rest, whole)
	} else if len(line) > 0 || !whole {
		// A line whose head is all (Unicode) white space but goes on is counted as non-data
		// without looking further: only a hostile server sends one.
		b.nonData += b.lineLen
		if b.nonData > b.maxNonData {
			b.err = fmt.Errorf("%w: over %d bytes", errNonDataTooLong, b.maxNonData)
		}
	}
	b.lineLen, b.tail, b.started = 0, 0, false
}

// asciiSpace is the ASCII white space bytes.TrimSpace removes.
const asciiSpace = " \t\n\v\f\r"

// mayBeErrorLine reports whether a data line whose text after "data:" starts with rest may
// match go-openai's error prefix (`^data:\s*{"error":`, \s being ASCII space, \t, \n, \f or
// \r); whole says that rest is the line's whole remainder rather than its first bytes.
func mayBeErrorLine(rest []byte, whole bool) bool {
	rest = bytes.TrimLeft(rest, " \t\n\f\r")
	if len(rest) >= len(errorPrefix) {
		return string(rest[:len(errorPrefix)]) == errorPrefix
	}
	if !whole && strings.HasPrefix(errorPrefix, string(rest)) {
		return true // too little of the line is known to tell
	}
	return false
}

// drain reads what follows [DONE] (at most 64 KiB) so the connection can be reused, and
// reports whether the body ended.
func (b *sseBody) drain() bool {
	_, err := io.CopyN(io.Discard, b.rc, 64<<10)
	return errors.Is(err, io.EOF)
}

func (b *sseBody) Close() error { return b.rc.Close() }
