package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync/atomic"

	goopenai "github.com/sashabaranov/go-openai"
)

// sseBody is the body of a streaming response, read line by line by the adapter (next):
// go-openai opens the stream (request, status, error bodies) and closes it, but its line
// reader is not used. That reader cost, per line, a ReadBytes copy, a regexp ReplaceAll that
// allocates twice and two more regexp matches, and it held a 4 KiB buffer for the whole
// stream (go-openai v1.43.0, stream_reader.go; it still allocates the buffer, which is garbage
// once the stream is open): three allocations a chunk (docs/performance.md). next returns each
// payload in place, in a buffer that starts at sseBufInit bytes and grows only for a longer
// line.
//
// What it returns is what go-openai's RecvRaw returned: the text after "data:" and its white
// space of each data line, the line trimmed first; io.EOF after "data: [DONE]" (sawDone) or at
// the end of the body. Lines that are not data lines are go-openai's "empty messages": more
// than emptyLimit in a row fail the stream (goopenai.ErrTooManyEmptyStreamMessages), the blank
// line that ends each event not counted, nor one "event:" line before a data line (the name
// the Responses and Messages APIs give each event; DESIGN §3.11), and their text is kept, as
// go-openai keeps it, to report a body that ends as a JSON error object (a server answering
// 200 with {"error": {...}}) as that error. An in-stream error event ("data: {"error": ...}") is a
// payload like any other: the chunk decoder makes it an *goopenai.APIError. At the body's
// end a last line without '\n' is read too: "data: [DONE]" ends the stream, another data line
// is an event cut off and dropped (go-openai dropped every such line), a non-data line joins
// the error text. A read that fails mid-line returns its error, not the partial line.
//
// It caps one line at maxLine bytes (errLineTooLong) and the stream's non-data lines at
// maxNonData bytes (errNonDataTooLong).
type sseBody struct {
	rc         io.ReadCloser
	maxLine    int
	maxNonData int
	emptyLimit int

	buf     []byte // unread bytes are buf[r:w]
	r, w    int
	scanned int   // bytes of buf[r:w] searched for '\n' without finding one
	rerr    error // the body's read error, returned once buf is empty

	nonData   int
	empty     int    // non-data lines since the last data line
	afterData bool   // the line before was a data line: a blank line now ends its event
	named     bool   // the line before was an event: line, which names the data line after it
	acc       []byte // the non-data lines, trimmed and joined (bounded by maxNonData)
	sawData   bool   // a data line was read
	ctype     string // the response's Content-Type (notStream)
	sawDone   bool
	err       error // sticky: the error next returned
}

// sseBufInit is the initial size of an sseBody's buffer, in bytes: room for a chunk of vLLM
// (≈ 250 bytes with a long model name, ≈ 400 with usage) and the start of the next.
const sseBufInit = 512

// sseEmptyLimit is go-openai's default EmptyMessagesLimit (config.go, v1.43.0).
const sseEmptyLimit = 300

// maxEmptyReads bounds reads that return no byte and no error (bufio's limit).
const maxEmptyReads = 100

func newSSEBody(rc io.ReadCloser, maxLine, maxNonData int) *sseBody {
	return &sseBody{rc: rc, maxLine: maxLine, maxNonData: maxNonData, emptyLimit: sseEmptyLimit}
}

// next returns the payload of the next data line, valid until the next call, or io.EOF at
// the stream's end, or the error that ended it.
func (b *sseBody) next() ([]byte, error) {
	for b.err == nil {
		line, last, err := b.line()
		if err != nil {
			b.err = b.end(err)
			break
		}
		t := bytes.TrimSpace(line)
		if rest, ok := bytes.CutPrefix(t, []byte("data:")); ok {
			b.empty, b.afterData, b.named, b.sawData = 0, true, false, true
			p := bytes.TrimLeft(rest, reSpace)
			switch {
			case string(p) == "[DONE]":
				b.sawDone, b.err = true, io.EOF
			case last:
				// A data line the body's end cut off is an event that never ended (go-openai
				// and the SSE rules drop it too): the stream ended without [DONE].
				b.err = b.end(io.EOF)
			default:
				return p, nil
			}
			break
		}
		if len(t) == 0 && b.afterData {
			b.afterData = false // the event's separator
			continue
		}
		b.afterData = false
		if !b.named && bytes.HasPrefix(t, []byte("event:")) {
			// The event's name (the Responses and Messages APIs name each event; its data
			// repeats the name as "type"): one before each data line is the event's, not an
			// empty message.
			b.named = true
			continue
		}
		b.named = false
		if len(t) > 0 {
			b.nonData += len(line)
			if b.nonData > b.maxNonData {
				b.err = b.overLimit(fmt.Errorf("%w: over %d bytes", errNonDataTooLong, b.maxNonData))
				break
			}
			b.acc = append(b.acc, t...)
		}
		if b.empty++; b.empty > b.emptyLimit {
			b.err = b.overLimit(goopenai.ErrTooManyEmptyStreamMessages)
		}
	}
	return nil, b.err
}

// reSpace is the white space of RE2's \s, which go-openai's `^data:\s*` strips.
const reSpace = " \t\n\f\r"

// end is the error of a body that stopped at err (io.EOF: it ended) before [DONE]: the JSON
// error object its non-data lines spell, when they spell one (go-openai's ErrorAccumulator),
// else, for a body that ended without a data line, why it was no stream (notStream), else err.
func (b *sseBody) end(err error) error {
	if len(b.acc) > 0 {
		var er goopenai.ErrorResponse
		if json.Unmarshal(b.acc, &er) == nil && er.Error != nil {
			return fmt.Errorf("error, %w", er.Error)
		}
	}
	if err == io.EOF {
		if why := b.notStream(); why != nil {
			return why
		}
	}
	return err
}

// overLimit is the error of a body that passed a bound on its non-data lines (err): why it
// is no stream, for a body without a data line that is none (notStream: an HTML page, a JSON
// body of over sseEmptyLimit lines), else err.
func (b *sseBody) overLimit(err error) error {
	if why := b.notStream(); why != nil {
		return why
	}
	return err
}

// line returns the next line without its '\n'; last marks the body's last bytes when they
// do not end in one (the body ended: io.EOF). Bytes that a failed read cut off are no line:
// the read's error is returned instead, as go-openai's ReadBytes returned it.
func (b *sseBody) line() (line []byte, last bool, err error) {
	for empties := 0; ; {
		if i := bytes.IndexByte(b.buf[b.r+b.scanned:b.w], '\n'); i >= 0 {
			end := b.r + b.scanned + i
			line := b.buf[b.r:end]
			b.r, b.scanned = end+1, 0
			if len(line) > b.maxLine {
				return nil, false, fmt.Errorf("%w: over %d bytes", errLineTooLong, b.maxLine)
			}
			return line, false, nil
		}
		b.scanned = b.w - b.r
		if b.scanned > b.maxLine {
			return nil, false, fmt.Errorf("%w: over %d bytes", errLineTooLong, b.maxLine)
		}
		if b.rerr != nil {
			if b.scanned == 0 || b.rerr != io.EOF {
				return nil, false, b.rerr
			}
			line := b.buf[b.r:b.w]
			b.r, b.scanned = b.w, 0
			return line, true, nil
		}
		if n := b.fill(); n > 0 {
			empties = 0
		} else if b.rerr == nil {
			// Consecutive reads of nothing, as bufio counts them.
			if empties++; empties >= maxEmptyReads {
				b.rerr = io.ErrNoProgress
			}
		}
	}
}

// fill reads once into the buffer's free end, first moving the unread bytes to its start, or
// growing it (up to one line of maxLine bytes and its '\n') when they fill it.
func (b *sseBody) fill() int {
	switch {
	case b.r == b.w:
		b.r, b.w = 0, 0
	case b.w == len(b.buf) && b.r > 0:
		b.w = copy(b.buf, b.buf[b.r:b.w])
		b.r = 0
	}
	if b.w == len(b.buf) {
		// line reports a full buffer of maxLine + 1 bytes before it asks for more.
		size := 2 * len(b.buf)
		if b.maxLine < size {
			size = b.maxLine + 1
		}
		buf := make([]byte, max(sseBufInit, size))
		b.w = copy(buf, b.buf[b.r:b.w])
		b.buf, b.r = buf, 0
	}
	n, err := b.rc.Read(b.buf[b.w:])
	b.w += n
	if err != nil {
		b.rerr = err
	}
	return n
}

// Read reads the body's bytes not yet consumed by next, for a caller other than the adapter.
func (b *sseBody) Read(p []byte) (int, error) {
	if b.r < b.w {
		n := copy(p, b.buf[b.r:b.w])
		b.r += n
		b.scanned = 0
		return n, nil
	}
	if b.rerr != nil {
		return 0, b.rerr
	}
	return b.rc.Read(p)
}

// maxDrainBytes bounds what drain reads after [DONE].
const maxDrainBytes = 64 << 10

// drain reads what follows [DONE] (at most maxDrainBytes) so the connection can be reused,
// into the event buffer (its unread bytes are dropped), and reports whether the body ended
// and, with the connection's arrival clock (nil: none), the kernel's arrival of its last read
// (Unix ns, 0 when it read none: [DONE]'s read had the body's end too). The clock is loaded
// after each of its own reads, before the connection can go back to the pool.
func (b *sseBody) drain(arrival *atomic.Int64) (ended bool, last int64) {
	b.r, b.w, b.scanned = 0, 0, 0
	if len(b.buf) == 0 {
		b.buf = make([]byte, sseBufInit)
	}
	for left, empties := maxDrainBytes, 0; b.rerr == nil && left > 0 && empties < maxEmptyReads; {
		n, err := b.rc.Read(b.buf[:min(len(b.buf), left)])
		if n > 0 || err != nil {
			if arrival != nil {
				last = arrival.Load()
			}
			empties = 0
		} else {
			empties++
		}
		left -= n
		b.rerr = err
	}
	return errors.Is(b.rerr, io.EOF), last
}

// ended marks the stream ended by its API's terminal event (an eventDecoder's), as [DONE]
// does, and returns io.EOF.
func (b *sseBody) ended() error {
	b.sawDone, b.err = true, io.EOF
	return io.EOF
}

func (b *sseBody) Close() error { return b.rc.Close() }
