package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
	goopenai "github.com/sashabaranov/go-openai"
)

// readEvents reads b to its end: the payloads, then the error that ended it.
func readEvents(b *sseBody) ([]string, error) {
	var got []string
	for {
		p, err := b.next()
		if err != nil {
			return got, err
		}
		got = append(got, string(p))
	}
}

// TestSSEBodyPayloads checks what next returns over every read size: each data line's text
// after "data:" and white space, the line trimmed (go-openai v1.43.0's `^data:\s*` on the
// TrimSpace'd line, stream_reader.go), io.EOF at [DONE] or the end; comments, event fields
// and blank lines skipped; a body of non-data lines that is a JSON error object is that error.
func TestSSEBodyPayloads(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
		done     bool
		apiErr   string // the message of the *goopenai.APIError that ends the stream
		// notStream: the body ends with errNotStream (one JSON body, not a stream)
		notStream bool
	}{
		{name: "events", in: "data: a\n\ndata: b\n\ndata: [DONE]\n\n", want: []string{"a", "b"}, done: true},
		{name: "crlf", in: "data: a\r\n\r\ndata: [DONE]\r\n\r\n", want: []string{"a"}, done: true},
		{name: "spacing", in: "data:a\n  data:\t x \ndata:[DONE]", want: []string{"a", "x"}, done: true},
		{name: "comments", in: ": ping\n\nevent: x\nid: 1\n\ndata: a\n\n", want: []string{"a"}},
		// A data line the end cuts off is an event that never ended: dropped, like go-openai.
		{name: "no trailing newline", in: "data: a\n\ndata: b", want: []string{"a"}},
		{name: "not done", in: "data: [DONE]x\n", want: []string{"[DONE]x"}},
		{name: "after done", in: "data: [DONE]\n\ndata: a\n\n", done: true},
		{name: "error event", in: "data: {\"error\":{\"message\":\"boom\"}}\n\n", want: []string{`{"error":{"message":"boom"}}`}},
		{name: "error body", in: "{\"error\":{\"message\":\"boom\",\"type\":\"x\"}}\n", apiErr: "boom"},
		{name: "error body unterminated", in: "{\"error\":{\"message\":\"boom\"}}", apiErr: "boom"},
		// go-openai's accumulator joins the trimmed lines: a pretty-printed object still parses.
		{name: "pretty error body", in: "{\n  \"error\": {\n    \"message\": \"boom\"\n  }\n}\n", apiErr: "boom"},
		{name: "json answer", in: "{\"choices\":[{\"message\":{\"content\":\"a\"}}]}", notStream: true},
		{name: "empty", in: ""},
	}
	for _, tt := range tests {
		for step := 1; step <= max(len(tt.in), 1); step++ {
			b := newSSEBody(io.NopCloser(&oneByteReader{s: tt.in, n: step}), 1<<10, 1<<10)
			got, err := readEvents(b)
			var apiErr *goopenai.APIError
			switch {
			case tt.apiErr != "":
				if !errors.As(err, &apiErr) || apiErr.Message != tt.apiErr {
					t.Fatalf("%s step %d: error %v, want the API error %q", tt.name, step, err, tt.apiErr)
				}
			case tt.notStream:
				if !errors.Is(err, errNotStream) {
					t.Fatalf("%s step %d: error %v, want errNotStream", tt.name, step, err)
				}
			case err != io.EOF:
				t.Fatalf("%s step %d: error %v, want io.EOF", tt.name, step, err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || b.sawDone != tt.done {
				t.Fatalf("%s step %d: %q done %v, want %q done %v", tt.name, step, got, b.sawDone, tt.want, tt.done)
			}
		}
	}
}

// TestSSEBodyLimits checks the caps at their edges, with a line cap above the initial buffer
// so that the buffer grows to it: a line of maxLine bytes passes and one more fails, ended by
// '\n' or by the body's end; maxNonData bytes of non-data lines pass and one more fails; 300
// non-data lines in a row pass (go-openai's EmptyMessagesLimit, config.go) and 301 fail, the
// separator after a data line not counted.
func TestSSEBodyLimits(t *testing.T) {
	const maxLine, maxNonData = 700, 100
	line := func(n int) string { return "data: " + strings.Repeat("x", n-len("data: ")) }
	blank := strings.Repeat("\n", sseEmptyLimit)
	tests := []struct {
		name, in string
		n        int // payloads before the end
		err      error
	}{
		{name: "line at cap", in: "data: a\n" + line(maxLine) + "\n", n: 2, err: io.EOF},
		{name: "line over cap", in: "data: a\n" + line(maxLine+1) + "\n", n: 1, err: errLineTooLong},
		{name: "unterminated line at cap", in: "data: a\n" + line(maxLine), n: 1, err: io.EOF},
		{name: "unterminated line over cap", in: "data: a\n" + line(maxLine+1), n: 1, err: errLineTooLong},
		{name: "non-data at cap", in: strings.Repeat(": 34567890\n", 10) + "data: a\n", n: 1, err: io.EOF},
		{name: "non-data over cap", in: strings.Repeat(": 34567890\n", 10) + ":\n", err: errNonDataTooLong},
		{name: "blank lines at limit", in: blank + "data: a\n", n: 1, err: io.EOF},
		{name: "blank lines over limit", in: blank + "\ndata: a\n", err: goopenai.ErrTooManyEmptyStreamMessages},
		// After a data line the first blank line is its event's end, not an empty message.
		{name: "separator not counted", in: "data: a\n\n" + blank + "data: b\n", n: 2, err: io.EOF},
		{name: "separator and one more", in: "data: a\n\n" + blank + "\ndata: b\n", n: 1, err: goopenai.ErrTooManyEmptyStreamMessages},
	}
	for _, tt := range tests {
		for _, step := range []int{1, 7, 1 << 10} {
			b := newSSEBody(io.NopCloser(&oneByteReader{s: tt.in, n: step}), maxLine, maxNonData)
			got, err := readEvents(b)
			if !errors.Is(err, tt.err) || len(got) != tt.n {
				t.Errorf("%s step %d: %d payloads, error %v; want %d, %v", tt.name, step, len(got), err, tt.n, tt.err)
			}
			if len(b.buf) > maxLine+1 {
				t.Errorf("%s step %d: buffer of %d bytes for lines of at most %d", tt.name, step, len(b.buf), maxLine)
			}
		}
	}
}

// dataErrReader returns s in reads of at most n bytes, the last one with err.
type dataErrReader struct {
	s   string
	n   int
	err error
}

func (r *dataErrReader) Read(p []byte) (int, error) {
	k := min(len(p), r.n, len(r.s))
	copy(p, r.s[:k])
	if r.s = r.s[k:]; r.s == "" {
		return k, r.err
	}
	return k, nil
}

// TestSSEBodyReadErrors: a read that fails (a reset, a chunked body cut short) ends the stream
// with its error, after the complete lines before it and never with the line it cut, whether
// the error comes with the last bytes or alone; with io.EOF the complete lines all count.
func TestSSEBodyReadErrors(t *testing.T) {
	reset := errors.New("read: connection reset by peer")
	for _, cut := range []error{io.ErrUnexpectedEOF, reset} {
		for _, in := range []string{"data: a\n\ndata: {\"choices\":[{\"delta\":{\"con", "data: a\n\n"} {
			for _, step := range []int{1, 5, 1 << 10} {
				b := newSSEBody(io.NopCloser(&dataErrReader{s: in, n: step, err: cut}), 1<<10, 1<<10)
				got, err := readEvents(b)
				if !errors.Is(err, cut) || len(got) != 1 || got[0] != "a" {
					t.Errorf("%q cut by %v, step %d: %q, %v; want [a] and the read's error", in, cut, step, got, err)
				}
			}
		}
	}
	b := newSSEBody(io.NopCloser(&dataErrReader{s: "data: a\n\ndata: [DONE]\n\n", n: 1 << 10, err: io.EOF}), 1<<10, 1<<10)
	if got, err := readEvents(b); err != io.EOF || len(got) != 1 || !b.sawDone {
		t.Errorf("data with io.EOF: %q %v done %v", got, err, b.sawDone)
	}
}

// TestSSEBodyLongLine: a line longer than the initial buffer comes back whole, the buffer
// grown to hold it and no larger than the line cap allows.
func TestSSEBodyLongLine(t *testing.T) {
	long := strings.Repeat("y", 3000)
	in := "data: a\n\ndata: " + long + "\n\ndata: b\n\ndata: [DONE]\n\n"
	for _, step := range []int{1, 100, 1 << 12} {
		b := newSSEBody(io.NopCloser(&oneByteReader{s: in, n: step}), 4096, 64)
		got, err := readEvents(b)
		if err != io.EOF || len(got) != 3 || got[1] != long || got[2] != "b" || !b.sawDone {
			t.Fatalf("step %d: %d payloads, %v, done %v", step, len(got), err, b.sawDone)
		}
		if len(b.buf) > 4097 {
			t.Fatalf("step %d: buffer %d bytes", step, len(b.buf))
		}
	}
}

// TestSSEBodyDrain: after [DONE], Read returns the unread bytes in order; drain reads the
// rest of the body and reports its end, not past maxDrainBytes, and gives up on a body that
// returns nothing forever.
func TestSSEBodyDrain(t *testing.T) {
	b := newSSEBody(io.NopCloser(strings.NewReader("data: a\n\ndata: [DONE]\n\ntrailer")), 1<<10, 1<<10)
	if got, err := readEvents(b); err != io.EOF || len(got) != 1 {
		t.Fatalf("%q %v", got, err)
	}
	rest, err := io.ReadAll(b)
	if err != nil || string(rest) != "\ntrailer" {
		t.Fatalf("rest %q %v, want the bytes after the [DONE] line", rest, err)
	}
	b = newSSEBody(io.NopCloser(strings.NewReader("data: [DONE]\n\n"+strings.Repeat("z", 5000))), 1<<10, 1<<10)
	if _, err := b.next(); err != io.EOF {
		t.Fatalf("next %v: want io.EOF", err)
	}
	if ended, last := b.drain(nil); !ended || last != 0 {
		t.Fatalf("drain: ended %v, last %d; want a drained body and no arrival without a clock", ended, last)
	}
	b = newSSEBody(io.NopCloser(strings.NewReader("data: [DONE]\n\n"+strings.Repeat("z", maxDrainBytes+1000))), 1<<10, 1<<10)
	if _, err := b.next(); err != io.EOF {
		t.Fatalf("next %v: want io.EOF", err)
	}
	if ended, _ := b.drain(nil); ended {
		t.Fatal("drain ended a body longer than maxDrainBytes after [DONE]")
	}
	b = newSSEBody(io.NopCloser(io.MultiReader(strings.NewReader("data: [DONE]\n\n"), noProgress{})), 1<<10, 1<<10)
	if _, err := b.next(); err != io.EOF {
		t.Fatalf("next %v: want io.EOF", err)
	}
	if ended, _ := b.drain(nil); ended {
		t.Fatal("drain ended a body that returns nothing forever")
	}
}

// noProgress returns (0, nil) forever.
type noProgress struct{}

func (noProgress) Read([]byte) (int, error) { return 0, nil }

// stutter returns its bytes one at a time, each read of one byte after one of nothing.
type stutter struct {
	s     string
	empty bool
}

func (r *stutter) Read(p []byte) (int, error) {
	if r.s == "" {
		return 0, io.EOF
	}
	if r.empty = !r.empty; r.empty {
		return 0, nil
	}
	p[0], r.s = r.s[0], r.s[1:]
	return 1, nil
}

// TestSSEBodyNoProgress: a body whose reads return nothing and no error ends with
// io.ErrNoProgress, as bufio's reader ends it, instead of spinning; reads of nothing between
// reads of something are not counted together (bufio counts them in a row).
func TestSSEBodyNoProgress(t *testing.T) {
	b := newSSEBody(io.NopCloser(noProgress{}), 1<<10, 1<<10)
	if _, err := b.next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("error %v, want io.ErrNoProgress", err)
	}
	long := strings.Repeat("x", 3*maxEmptyReads)
	b = newSSEBody(io.NopCloser(&stutter{s: "data: " + long + "\n"}), 1<<10, 1<<10)
	if got, err := readEvents(b); err != io.EOF || len(got) != 1 || got[0] != long {
		t.Fatalf("a reader that progresses: %d payloads, %v", len(got), err)
	}
}

// referenceEvents is next's reference: the whole body split into lines at once, each handled
// as go-openai v1.43.0's processLines handles it (stream_reader.go: TrimSpace, `^data:\s*`,
// "[DONE]", EmptyMessagesLimit, the error accumulator) with the adapter's caps and its
// documented differences: the blank line after a data line is the event's separator, not an
// empty message, an "event:" line is the name of the data line after it (one in a row: not
// an empty message, not error text), and a last line without '\n' counts as "[DONE]" or as
// error text only.
func referenceEvents(data []byte, maxLine, maxNonData, emptyLimit int) (payloads []string, done bool, err error) {
	lines := bytes.Split(data, []byte("\n"))
	nonData, empty, afterData, named, sawData := 0, 0, false, false, false
	var acc []byte
	// A body without a data line whose non-data lines are one JSON object is no stream
	// (notStream; the fuzzed body has no Content-Type), at its end or at a limit.
	notStream := func(err error) error {
		if !sawData && len(acc) > 0 && acc[0] == '{' && json.Valid(acc) {
			return errNotStream
		}
		return err
	}
	for i, l := range lines {
		last := i == len(lines)-1
		if last && len(l) == 0 {
			break
		}
		if len(l) > maxLine {
			return payloads, false, errLineTooLong
		}
		t := bytes.TrimSpace(l)
		if rest, ok := bytes.CutPrefix(t, []byte("data:")); ok {
			empty, afterData, named, sawData = 0, true, false, true
			p := bytes.TrimLeft(rest, " \t\n\f\r")
			if string(p) == "[DONE]" {
				return payloads, true, io.EOF
			}
			if !last {
				payloads = append(payloads, string(p))
			}
			continue
		}
		if len(t) == 0 && afterData {
			afterData = false
			continue
		}
		afterData = false
		if !named && bytes.HasPrefix(t, []byte("event:")) {
			named = true
			continue
		}
		named = false
		if len(t) > 0 {
			if nonData += len(l); nonData > maxNonData {
				return payloads, false, notStream(errNonDataTooLong)
			}
			acc = append(acc, t...)
		}
		if empty++; empty > emptyLimit {
			return payloads, false, notStream(goopenai.ErrTooManyEmptyStreamMessages)
		}
	}
	var er goopenai.ErrorResponse
	if len(acc) > 0 && json.Unmarshal(acc, &er) == nil && er.Error != nil {
		return payloads, false, er.Error
	}
	return payloads, false, notStream(io.EOF)
}

// bodyDoer is a go-openai HTTPDoer that answers every request 200 with body.
type bodyDoer struct{ body []byte }

func (d bodyDoer) Do(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/event-stream"}},
		Body: io.NopCloser(bytes.NewReader(d.body))}, nil
}

// goOpenAIEvents reads data with go-openai's own stream reader (RecvRaw), its empty-message
// limit out of the way: the payloads and the error that ended them.
func goOpenAIEvents(t *testing.T, data []byte) ([]string, error) {
	cfg := goopenai.DefaultConfig("k")
	cfg.BaseURL, cfg.HTTPClient, cfg.EmptyMessagesLimit = "http://x/v1", bodyDoer{data}, math.MaxUint32
	s, err := goopenai.NewClientWithConfig(cfg).CreateChatCompletionStream(context.Background(), goopenai.ChatCompletionRequest{Model: "m"})
	if err != nil {
		t.Fatalf("go-openai: open: %v", err)
	}
	defer s.Close()
	var got []string
	for {
		p, err := s.RecvRaw()
		if err != nil {
			return got, err
		}
		got = append(got, string(p))
	}
}

// goOpenAIErrorLine is go-openai v1.43.0's errorPrefix (stream_reader.go), matched against
// the trimmed line: after such a line go-openai reads one line more and reports the error
// itself, where the adapter hands the line to its chunk decoder.
var goOpenAIErrorLine = regexp.MustCompile(`^data:\s*{"error":`)

// FuzzSSEBody feeds arbitrary bytes, cut into arbitrary reads, to the event reader and checks
// it twice: against referenceEvents, which reads the same bytes whole (the same payloads,
// [DONE] and error; a buffer never larger than a line at the cap, a cap above the initial
// buffer so that it grows), and against go-openai's own reader for the bodies where the
// adapter does not differ by design (every line ended by '\n', no error-prefix line, no
// "event:" line, which go-openai takes for error text, no caps, and a JSON object that is no
// stream ended at EOF):
// the same payloads, ending the same way.
func FuzzSSEBody(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s), uint8(7))
	}
	f.Add(bytes.Repeat([]byte("x"), 300), uint8(255))
	f.Add([]byte(": c\n: c\n: c\n: c\n: c\n: c\n"), uint8(1))
	f.Add([]byte(strings.Repeat("\n", 301)+"data: a\n"), uint8(3))
	f.Add([]byte("data: "+strings.Repeat("y", 690)+"\n\ndata: [DONE]\n"), uint8(200))
	f.Add([]byte("{\"error\":{\"message\":\"boom\"}}\n"), uint8(4))
	f.Add([]byte("{}\n"+strings.Repeat(": c\n", 9)), uint8(5))
	f.Add([]byte("{\n}\n"), uint8(2))
	const maxLine, maxNonData, limit = 700, 16, 8
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		b := newSSEBody(io.NopCloser(&chunkedReader{r: bytes.NewReader(data), n: int(step) + 1}), maxLine, maxNonData)
		b.emptyLimit = limit
		got, err := readEvents(b)
		want, done, wantErr := referenceEvents(data, maxLine, maxNonData, limit)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("payloads %q, want %q", got, want)
		}
		if b.sawDone != done {
			t.Fatalf("done %v, want %v", b.sawDone, done)
		}
		if !sameEnd(err, wantErr) {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		if len(b.buf) > maxLine+1 {
			t.Fatalf("buffer of %d bytes", len(b.buf))
		}

		if !bytes.HasSuffix(data, []byte("\n")) {
			data = append(slices.Clip(data), '\n')
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			if t := bytes.TrimSpace(l); goOpenAIErrorLine.Match(t) || bytes.HasPrefix(t, []byte("event:")) {
				return
			}
		}
		b = newSSEBody(io.NopCloser(&chunkedReader{r: bytes.NewReader(data), n: int(step) + 1}), math.MaxInt, math.MaxInt)
		b.emptyLimit = math.MaxInt
		got, err = readEvents(b)
		want, wantErr = goOpenAIEvents(t, data)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("payloads %q, go-openai's %q", got, want)
		}
		// A body that is one JSON object and no data line is no stream (notStream), where
		// go-openai reads a stream that ended: a difference by design.
		if !sameEnd(err, wantErr) && !(errors.Is(err, errNotStream) && wantErr == io.EOF) {
			t.Fatalf("error %v, go-openai's %v", err, wantErr)
		}
	})
}

// sameEnd reports whether two stream errors end a stream the same way: both an
// *goopenai.APIError with the same message, or the same error.
func sameEnd(err, want error) bool {
	var a, w *goopenai.APIError
	if errors.As(want, &w) {
		return errors.As(err, &a) && a.Message == w.Message
	}
	return errors.Is(err, want)
}

// TestStreamCutMidLine: a server that closes the connection in the middle of a chunk's line
// (the chunked body cut short) fails the request as stream_broken with the cut in its
// message, after the chunk before it, not as a bad chunk decoded from half a line.
func TestStreamCutMidLine(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(contentChunk("a"))
		io.WriteString(w, `data: {"id":"x","choices":[{"delta":{"content":"b`)
		w.(http.Flusher).Flush()
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
	}))
	defer srv.Close()
	rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4})
	if rec.ErrorClass != record.ErrStreamBroken || !strings.Contains(rec.Error, "unexpected EOF") || len(rec.Chunks) != 1 {
		t.Fatalf("record %s %q, %d chunks; want stream_broken naming the cut, after 1 chunk", rec.ErrorClass, rec.Error, len(rec.Chunks))
	}
}

// TestStreamRedirectNotFollowed: a 3xx that net/http does not follow (300, 304, a 302 without
// Location) answers a stream request without a stream: class redirect, naming the status,
// where go-openai would have taken it for a success.
func TestStreamRedirectNotFollowed(t *testing.T) {
	for _, code := range []int{300, 302, 304} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
		}))
		rec := do(t, newClient(t, srv.URL, nil), record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4})
		srv.Close()
		if rec.ErrorClass != record.ErrRedirect || !strings.Contains(rec.Error, fmt.Sprintf("%d %s", code, http.StatusText(code))) {
			t.Errorf("%d: record %s %q; want redirect naming the status", code, rec.ErrorClass, rec.Error)
		}
	}
}
