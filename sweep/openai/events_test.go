package openai

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

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
	}{
		{name: "events", in: "data: a\n\ndata: b\n\ndata: [DONE]\n\n", want: []string{"a", "b"}, done: true},
		{name: "crlf", in: "data: a\r\n\r\ndata: [DONE]\r\n\r\n", want: []string{"a"}, done: true},
		{name: "spacing", in: "data:a\n  data:\t x \ndata:[DONE]", want: []string{"a", "x"}, done: true},
		{name: "comments", in: ": ping\n\nevent: x\nid: 1\n\ndata: a\n\n", want: []string{"a"}},
		{name: "no trailing newline", in: "data: a\n\ndata: b", want: []string{"a", "b"}},
		{name: "not done", in: "data: [DONE]x\n", want: []string{"[DONE]x"}},
		{name: "after done", in: "data: [DONE]\n\ndata: a\n\n", done: true},
		{name: "error event", in: "data: {\"error\":{\"message\":\"boom\"}}\n\n", want: []string{`{"error":{"message":"boom"}}`}},
		{name: "error body", in: "{\"error\":{\"message\":\"boom\",\"type\":\"x\"}}\n", apiErr: "boom"},
		// go-openai's accumulator joins the trimmed lines: a pretty-printed object still parses.
		{name: "pretty error body", in: "{\n  \"error\": {\n    \"message\": \"boom\"\n  }\n}\n", apiErr: "boom"},
		{name: "json answer", in: "{\"choices\":[{\"message\":{\"content\":\"a\"}}]}"},
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
			case err != io.EOF:
				t.Fatalf("%s step %d: error %v, want io.EOF", tt.name, step, err)
			}
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || b.sawDone != tt.done {
				t.Fatalf("%s step %d: %q done %v, want %q done %v", tt.name, step, got, b.sawDone, tt.want, tt.done)
			}
		}
	}
}

// TestSSEBodyLimits checks the caps at their edges: a line of maxLine bytes passes and one
// more fails; maxNonData bytes of non-data lines pass and one more fails; 300 non-data lines
// in a row pass (go-openai's EmptyMessagesLimit, config.go) and 301 fail, the separator after
// a data line not counted.
func TestSSEBodyLimits(t *testing.T) {
	const maxLine, maxNonData = 64, 100
	line := func(n int) string { return "data: " + strings.Repeat("x", n-len("data: ")) + "\n" }
	tests := []struct {
		name, in string
		err      error
	}{
		{name: "line at cap", in: line(maxLine), err: io.EOF},
		{name: "line over cap", in: line(maxLine + 1), err: errLineTooLong},
		{name: "unterminated line over cap", in: strings.TrimSuffix(line(maxLine+1), "\n"), err: errLineTooLong},
		{name: "non-data at cap", in: strings.Repeat(": 34567890\n", 10) + "data: a\n", err: io.EOF},
		{name: "non-data over cap", in: strings.Repeat(": 34567890\n", 10) + ":\n", err: errNonDataTooLong},
		{name: "blank lines at limit", in: strings.Repeat("\n", sseEmptyLimit) + "data: a\n", err: io.EOF},
		{name: "blank lines over limit", in: strings.Repeat("\n", sseEmptyLimit+1) + "data: a\n", err: goopenai.ErrTooManyEmptyStreamMessages},
		{name: "separators", in: strings.Repeat("data: a\n\n", 2*sseEmptyLimit), err: io.EOF},
	}
	for _, tt := range tests {
		for _, step := range []int{1, 7, 1 << 10} {
			b := newSSEBody(io.NopCloser(&oneByteReader{s: tt.in, n: step}), maxLine, maxNonData)
			if _, err := readEvents(b); !errors.Is(err, tt.err) {
				t.Errorf("%s step %d: error %v, want %v", tt.name, step, err, tt.err)
			}
			if len(b.buf) > max(sseBufInit, maxLine+1) {
				t.Errorf("%s step %d: buffer of %d bytes for lines of at most %d", tt.name, step, len(b.buf), maxLine)
			}
		}
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

// TestSSEBodyDrain: after [DONE], drain reads the rest of the body, the bytes already
// buffered first, and reports its end; Read returns the unread bytes in order.
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
	if _, err := b.next(); err != io.EOF || !b.drain() {
		t.Fatalf("next %v: want io.EOF and a drained body", err)
	}
}

// noProgress returns (0, nil) forever.
type noProgress struct{}

func (noProgress) Read([]byte) (int, error) { return 0, nil }

// TestSSEBodyNoProgress: a body whose reads return nothing and no error ends with
// io.ErrNoProgress, as bufio's reader ends it, instead of spinning.
func TestSSEBodyNoProgress(t *testing.T) {
	b := newSSEBody(io.NopCloser(noProgress{}), 1<<10, 1<<10)
	if _, err := b.next(); !errors.Is(err, io.ErrNoProgress) {
		t.Fatalf("error %v, want io.ErrNoProgress", err)
	}
}

// referenceEvents is next's reference: the whole body split into lines at once, each handled
// as go-openai v1.43.0's processLines handles it (stream_reader.go: TrimSpace, `^data:\s*`,
// "[DONE]", EmptyMessagesLimit) with the adapter's caps and its one difference, that the blank
// line after a data line is the event's separator, not an empty message.
func referenceEvents(data []byte, maxLine, maxNonData int) (payloads []string, done bool, err error) {
	lines := bytes.Split(data, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	nonData, empty, afterData := 0, 0, false
	var acc []byte
	for _, l := range lines {
		if len(l) > maxLine {
			return payloads, false, errLineTooLong
		}
		t := bytes.TrimSpace(l)
		if rest, ok := bytes.CutPrefix(t, []byte("data:")); ok {
			empty, afterData = 0, true
			p := bytes.TrimLeft(rest, reSpace)
			if string(p) == "[DONE]" {
				return payloads, true, io.EOF
			}
			payloads = append(payloads, string(p))
			continue
		}
		if len(t) == 0 && afterData {
			afterData = false
			continue
		}
		afterData = false
		if len(t) > 0 {
			if nonData += len(l); nonData > maxNonData {
				return payloads, false, errNonDataTooLong
			}
			acc = append(acc, t...)
		}
		if empty++; empty > sseEmptyLimit {
			return payloads, false, goopenai.ErrTooManyEmptyStreamMessages
		}
	}
	return payloads, false, (&sseBody{acc: acc}).end(io.EOF)
}

// FuzzSSEBody feeds arbitrary bytes, cut into arbitrary reads, to the event reader and checks
// it against referenceEvents, which reads the same bytes whole: the same payloads, the same
// [DONE], the same error; and the buffer never outgrows one line at the cap.
func FuzzSSEBody(f *testing.F) {
	for _, s := range streamSeeds {
		f.Add([]byte(s), uint8(7))
	}
	f.Add(bytes.Repeat([]byte("x"), 300), uint8(255))
	f.Add([]byte(": c\n: c\n: c\n: c\n: c\n: c\n"), uint8(1))
	f.Add([]byte(strings.Repeat("\n", 301)+"data: a\n"), uint8(3))
	const maxLine, maxNonData = 128, 16
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		b := newSSEBody(io.NopCloser(&chunkedReader{r: bytes.NewReader(data), n: int(step) + 1}), maxLine, maxNonData)
		got, err := readEvents(b)
		want, done, wantErr := referenceEvents(data, maxLine, maxNonData)
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") || len(got) != len(want) {
			t.Fatalf("payloads %q, want %q", got, want)
		}
		if b.sawDone != done {
			t.Fatalf("done %v, want %v", b.sawDone, done)
		}
		var apiErr *goopenai.APIError
		if errors.As(wantErr, &apiErr) {
			if !errors.As(err, &apiErr) {
				t.Fatalf("error %v, want %v", err, wantErr)
			}
		} else if !errors.Is(err, wantErr) {
			t.Fatalf("error %v, want %v", err, wantErr)
		}
		if len(b.buf) > max(sseBufInit, maxLine+1) {
			t.Fatalf("buffer of %d bytes", len(b.buf))
		}
	})
}
