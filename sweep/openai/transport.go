package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// Stream limits surfaced as errors by sseBody.Read.
var (
	errLineTooLong    = errors.New("openai: stream line too long")
	errNonDataTooLong = errors.New("openai: too many non-data stream bytes")
	errBodyTooLarge   = errors.New("openai: response body too large")
	errBadChunk       = errors.New("openai: bad chunk")
	errNoDone         = errors.New("openai: stream ended without data: [DONE]")
)

// doer is the HTTPDoer given to go-openai: it merges the extra body into JSON requests and
// bounds every response body.
type doer struct {
	hc   *http.Client
	opts *Options
}

// Do implements goopenai.HTTPDoer.
func (d *doer) Do(req *http.Request) (*http.Response, error) {
	st, _ := req.Context().Value(stateKey{}).(*reqState)
	if req.Body != nil && req.Method == http.MethodPost && (len(d.opts.ExtraBody) > 0 || (st != nil && st.ignoreEOS)) {
		if err := d.mergeBody(req, st); err != nil {
			return nil, err
		}
	}
	resp, err := d.hc.Do(req)
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
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("openai: merge extra body: decode request: %w", err)
	}
	for k, v := range d.opts.ExtraBody {
		b, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("openai: merge extra body: field %q: %w", k, err)
		}
		obj[k] = b
	}
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
	req.Body = io.NopCloser(bytes.NewReader(out))
	req.ContentLength = int64(len(out))
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	return nil
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

// headLen is how many leading bytes of each line sseBody keeps to recognise "data: [DONE]".
const headLen = 32

// sseBody watches a server-sent-events body as go-openai reads it: it caps line length and
// non-data bytes, and notes whether the terminal "data: [DONE]" line arrived. It costs one
// IndexByte scan per Read and allocates nothing.
type sseBody struct {
	rc         io.ReadCloser
	maxLine    int
	maxNonData int

	lineLen int
	head    [headLen]byte
	nonData int
	sawDone bool
	err     error
}

func (b *sseBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	b.scan(p[:n])
	if errors.Is(err, io.EOF) && b.lineLen > 0 {
		b.endLine() // a last line without '\n'
	}
	if b.err != nil {
		return n, b.err
	}
	return n, err
}

// scan advances the line state over p.
func (b *sseBody) scan(p []byte) {
	for len(p) > 0 && b.err == nil {
		i := bytes.IndexByte(p, '\n')
		seg := p
		if i >= 0 {
			seg = p[:i]
		}
		if b.lineLen < headLen {
			copy(b.head[b.lineLen:], seg)
		}
		b.lineLen += len(seg)
		if b.lineLen > b.maxLine {
			b.err = fmt.Errorf("%w: over %d bytes", errLineTooLong, b.maxLine)
			return
		}
		if i < 0 {
			return
		}
		b.endLine()
		p = p[i+1:]
	}
}

// endLine classifies the finished line from its head and resets the line state.
func (b *sseBody) endLine() {
	n := min(b.lineLen, headLen)
	line := bytes.TrimSpace(b.head[:n])
	if rest, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		if b.lineLen <= headLen && string(bytes.TrimSpace(rest)) == "[DONE]" {
			b.sawDone = true
		}
	} else if len(line) > 0 {
		b.nonData += b.lineLen
		if b.nonData > b.maxNonData {
			b.err = fmt.Errorf("%w: over %d bytes", errNonDataTooLong, b.maxNonData)
		}
	}
	b.lineLen = 0
}

// drain reads what follows [DONE] (at most 64 KiB) so the connection can be reused.
func (b *sseBody) drain() { _, _ = io.CopyN(io.Discard, b.rc, 64<<10) }

func (b *sseBody) Close() error { return b.rc.Close() }
