package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/kneecap/kneecap/record"
)

// floorClient is the cheapest streaming client the benchmark can think of, used to measure
// the floor of the per-token cost on this machine: raw HTTP/1.1 over kept-alive TCP
// connections, a 1 KiB read buffer per connection, no extra goroutine per connection, no
// JSON decoding (a token is a "data:" line whose delta content is non-empty, found with
// bytes.Contains). It pays what any Go client pays per chunk — one read(2) that succeeds, one
// that returns EAGAIN, a netpoll wake-up of the reading goroutine — and almost nothing else.
// It runs under the same level runner, so the difference between its CPU per token and the
// real client's is the real client's own cost (net/http, go-openai, the adapter).
//
// It speaks just enough HTTP for `kneecap sim`: a 200 response with chunked transfer coding.
type floorClient struct {
	host  string // host:port
	model string

	mu   sync.Mutex
	idle []*floorConn
}

// floorConn is one kept-alive connection and its read buffer.
type floorConn struct {
	c  net.Conn
	br *bufio.Reader
}

// floorReadBuf is the floor client's read buffer per connection, in bytes: one event of
// `kneecap sim` (≈ 200 B) with room to spare.
const floorReadBuf = 1 << 10

func newFloorClient(baseURL, model string) (*floorClient, error) {
	u, err := url.Parse(baseURL)
	if err != nil || u.Scheme != "http" {
		return nil, fmt.Errorf("floor client: base url %q: want http://host:port/v1", baseURL)
	}
	return &floorClient{host: u.Host, model: model}, nil
}

// Models implements record.Client; the floor client serves one model.
func (f *floorClient) Models(context.Context) ([]string, error) { return []string{f.model}, nil }

// close closes the idle connections.
func (f *floorClient) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, fc := range f.idle {
		_ = fc.c.Close()
	}
	f.idle = nil
}

func (f *floorClient) get(ctx context.Context) (*floorConn, error) {
	f.mu.Lock()
	if n := len(f.idle); n > 0 {
		fc := f.idle[n-1]
		f.idle = f.idle[:n-1]
		f.mu.Unlock()
		return fc, nil
	}
	f.mu.Unlock()
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", f.host)
	if err != nil {
		return nil, err
	}
	return &floorConn{c: c, br: bufio.NewReaderSize(c, floorReadBuf)}, nil
}

func (f *floorClient) put(fc *floorConn) {
	f.mu.Lock()
	f.idle = append(f.idle, fc)
	f.mu.Unlock()
}

// Do implements record.Client.
func (f *floorClient) Do(ctx context.Context, req *record.Request, rec *record.Record) {
	rec.PromptTokens = req.PromptTokens
	t0 := time.Now()
	fc, err := f.get(ctx)
	if err != nil {
		f.fail(ctx, rec, t0, fmt.Errorf("floor client: dial: %w", err))
		return
	}
	tSend := time.Now()
	rec.Sent = tSend.UnixNano()
	rec.ConnWait = tSend.Sub(t0)
	// A cancelled ctx unblocks the read by expiring the connection's deadline.
	stop := context.AfterFunc(ctx, func() { _ = fc.c.SetReadDeadline(time.Unix(1, 0)) })
	chunks, err := f.stream(fc, req, tSend)
	if !stop() || err != nil {
		_ = fc.c.Close()
	} else {
		f.put(fc)
	}
	if err != nil {
		f.fail(ctx, rec, tSend, err)
		return
	}
	rec.Chunks = chunks
	rec.OutputTokens, rec.TokensSource = len(chunks), record.TokensFromChunks
	if len(chunks) == 0 {
		rec.Status, rec.ErrorClass, rec.Error = record.StatusError, record.ErrEmpty, "floor client: no content"
		return
	}
	rec.TTFT = time.Duration(chunks[0]) * time.Microsecond
	rec.E2E = time.Duration(chunks[len(chunks)-1]) * time.Microsecond
	rec.Status = record.StatusOK
}

func (f *floorClient) fail(ctx context.Context, rec *record.Record, t0 time.Time, err error) {
	if rec.Sent == 0 {
		rec.Sent = t0.UnixNano()
	}
	rec.E2E = time.Since(t0)
	rec.Status, rec.ErrorClass, rec.Error = record.StatusError, record.ErrStreamBroken, err.Error()
	if ctx.Err() != nil {
		rec.Status, rec.ErrorClass = record.StatusCancelled, record.ErrCancelled
	}
}

var (
	dataPrefix   = []byte("data:")
	contentField = []byte(`"content":"`)
	emptyContent = []byte(`"content":""`)
	doneLine     = []byte("data: [DONE]")
)

// stream writes the request and reads the response to data: [DONE] and the end of the chunked
// body, returning each content chunk's arrival offset in µs.
func (f *floorClient) stream(fc *floorConn, req *record.Request, tSend time.Time) ([]int64, error) {
	body, err := json.Marshal(map[string]any{
		"model":          f.model,
		"messages":       []map[string]string{{"role": "user", "content": req.Prompt}},
		"max_tokens":     req.MaxTokens,
		"stream":         true,
		"stream_options": map[string]bool{"include_usage": true},
	})
	if err != nil {
		return nil, fmt.Errorf("floor client: encode: %w", err)
	}
	head := fmt.Appendf(nil, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: text/event-stream\r\nContent-Length: %d\r\n\r\n", f.host, len(body))
	if _, err := fc.c.Write(append(head, body...)); err != nil {
		return nil, fmt.Errorf("floor client: write: %w", err)
	}
	br := fc.br
	status, err := br.ReadSlice('\n')
	if err != nil {
		return nil, fmt.Errorf("floor client: status line: %w", err)
	}
	if !bytes.HasPrefix(status, []byte("HTTP/1.1 200 ")) {
		return nil, fmt.Errorf("floor client: status %q", bytes.TrimSpace(status))
	}
	chunked := false
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return nil, fmt.Errorf("floor client: header: %w", err)
		}
		if len(bytes.TrimSpace(line)) == 0 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(bytes.TrimSpace(k), []byte("Transfer-Encoding")) {
			chunked = bytes.EqualFold(bytes.TrimSpace(v), []byte("chunked"))
		}
	}
	if !chunked {
		return nil, errors.New("floor client: response is not chunked")
	}
	chunks := make([]int64, 0, max(req.MaxTokens, 1))
	var line []byte // a data line split across transfer chunks
	sawDone := false
	for {
		sz, err := br.ReadSlice('\n')
		if err != nil {
			return nil, fmt.Errorf("floor client: chunk size: %w", err)
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(sz)), 16, 32)
		if err != nil {
			return nil, fmt.Errorf("floor client: chunk size %q: %w", sz, err)
		}
		if n == 0 {
			if _, err := br.Discard(2); err != nil { // the CRLF after the last chunk
				return nil, fmt.Errorf("floor client: trailer: %w", err)
			}
			break
		}
		for left := int(n); left > 0; {
			p, err := br.Peek(min(left, br.Size()))
			if len(p) == 0 {
				if err == nil {
					err = io.ErrUnexpectedEOF
				}
				return nil, fmt.Errorf("floor client: chunk: %w", err)
			}
			now := time.Since(tSend).Microseconds()
			for len(p) > 0 {
				i := bytes.IndexByte(p, '\n')
				if i < 0 {
					line = append(line, p...)
					left -= len(p)
					_, _ = br.Discard(len(p))
					break
				}
				l := p[:i]
				if len(line) > 0 {
					line = append(line, l...)
					l = line
				}
				if bytes.HasPrefix(l, dataPrefix) {
					if bytes.Equal(l, doneLine) {
						sawDone = true
					} else if bytes.Contains(l, contentField) && !bytes.Contains(l, emptyContent) {
						chunks = append(chunks, now)
					}
				}
				line = line[:0]
				left -= i + 1
				_, _ = br.Discard(i + 1)
				p = p[i+1:]
			}
		}
		if _, err := br.Discard(2); err != nil { // CRLF after the chunk data
			return nil, fmt.Errorf("floor client: chunk end: %w", err)
		}
	}
	if !sawDone {
		return nil, errors.New("floor client: stream ended without data: [DONE]")
	}
	return chunks, nil
}
