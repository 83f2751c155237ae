package workload

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// The trace formats a trace replay reads (DESIGN §3.9): pure parsing, no I/O beyond the
// reader.

// maxTraceLine caps one line of a trace file, in bytes; a recorded length is at most
// record.MaxTokens (tokenField).
const maxTraceLine = 16 << 20

// TraceEntry is one request of a trace.
type TraceEntry struct {
	// At is the arrival time from the trace's first arrival (the entries are sorted by it).
	At time.Duration
	// InputTokens and OutputTokens are the recorded lengths, in the server's tokens (int32,
	// as Line: a trace of millions of rows is held in memory).
	InputTokens, OutputTokens int32
	// Line is the entry's line in the file.
	Line int32
	// HashIDs are the ids of the prompt's blocks of block_tokens tokens (Mooncake): equal ids
	// are identical blocks. Empty for the other formats.
	HashIDs []int64
}

// TraceFile is a parsed trace: its entries sorted by arrival, the first at 0.
type TraceFile struct {
	// Format is the format read (auto resolved).
	Format record.TraceFormat
	// Entries are the usable requests, by arrival time.
	Entries []TraceEntry
	// Skipped counts the rows left out: failed requests (BurstGPT's 0 response tokens) and
	// rows without an output length; SkipReason says why, the first time.
	Skipped    int
	SkipReason string
	// Total is the file's usable requests and Last its last arrival from its first: Entries
	// holds all of them unless the file was parsed with a window (ParseTraceIn).
	Total int
	Last  time.Duration
	// Unordered counts the arrivals earlier than one before them (the entries are sorted),
	// and UnorderedLine is the line of the first.
	Unordered, UnorderedLine int
}

// errTraceUnordered is ParseTraceIn's error for a file whose arrivals are not in time order:
// its window cannot be cut while parsing (parse it whole, sort, then cut).
var errTraceUnordered = errors.New("trace: arrivals out of time order")

// traceSink collects a parser's entries, cutting the window [start, end) from the first
// arrival (end 0: to the end; on false: keep everything) as it goes. The window is cut only
// while the arrivals come in time order, as the published traces are: an arrival earlier
// than one before it ends a windowed parse with errTraceUnordered.
type traceSink struct {
	tf          *TraceFile
	on          bool
	start, end  time.Duration
	first, last time.Duration
	ordered     bool
}

// add takes entry e (At from the format's origin).
func (k *traceSink) add(e TraceEntry) error {
	tf := k.tf
	if tf.Total == 0 {
		k.first, k.last, k.ordered = e.At, e.At, true
	} else if e.At < k.last {
		if k.on {
			return errTraceUnordered
		}
		k.ordered = false
		if tf.Unordered++; tf.Unordered == 1 {
			tf.UnorderedLine = int(e.Line)
		}
	}
	tf.Total++
	k.last = max(k.last, e.At)
	if k.on {
		if rel := e.At - k.first; rel < k.start || (k.end > 0 && rel >= k.end) {
			return nil
		}
	}
	tf.Entries = append(tf.Entries, e)
	return nil
}

// ParseTrace reads a trace of format (TraceAuto or "": detected from the content: a line
// starting with { is Mooncake, a CSV header with "Request tokens" BurstGPT, with
// "ContextTokens" Azure; a UTF-8 byte-order mark is skipped). name names the file in errors,
// which give its line: "name:line: problem".
func ParseTrace(r io.Reader, name string, format record.TraceFormat) (*TraceFile, error) {
	return parseTrace(r, name, format, traceSink{})
}

// ParseTraceIn is ParseTrace keeping only the window (parseTraceWindow's "START-END") of the
// trace: the rows outside it are read, checked and counted (Total, Last) but not kept, so a
// window of a large trace takes the memory of the window. The file's arrivals must be in
// time order: else it returns an error for which traceUnordered is true (parse it whole with
// ParseTrace).
func ParseTraceIn(r io.Reader, name string, format record.TraceFormat, window string) (*TraceFile, error) {
	start, end, err := parseTraceWindow(window)
	if err != nil {
		return nil, fmt.Errorf("%s: window %w", name, err)
	}
	return parseTrace(r, name, format, traceSink{on: start > 0 || end > 0, start: start, end: end})
}

// traceUnordered reports whether err is ParseTraceIn's: the arrivals are not in time order.
func traceUnordered(err error) bool { return errors.Is(err, errTraceUnordered) }

// parseTrace reads a trace into k.
func parseTrace(r io.Reader, name string, format record.TraceFormat, k traceSink) (*TraceFile, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	if b, _ := br.Peek(3); bytes.Equal(b, []byte("\ufeff")) {
		br.Discard(3) // a byte-order mark
	}
	if format == "" || format == record.TraceAuto {
		f, err := detectTrace(br, name)
		if err != nil {
			return nil, err
		}
		format = f
	}
	k.tf = &TraceFile{}
	var err error
	switch format {
	case record.TraceMooncake:
		err = parseMooncake(br, name, &k)
	case record.TraceBurstGPT, record.TraceAzure:
		err = parseTraceCSV(br, name, format, &k)
	default:
		return nil, fmt.Errorf("%s: unknown trace format %q (auto, mooncake, burstgpt or azure)", name, format)
	}
	if err != nil {
		return nil, err
	}
	tf := k.tf
	tf.Format = format
	if tf.Total == 0 {
		return nil, fmt.Errorf("%s: no usable requests in the %s trace (%d skipped)", name, format, tf.Skipped)
	}
	if !k.ordered {
		slices.SortStableFunc(tf.Entries, func(a, b TraceEntry) int { return cmp.Compare(a.At, b.At) })
		k.first = tf.Entries[0].At
	}
	for i := range tf.Entries {
		tf.Entries[i].At -= k.first
	}
	tf.Last = k.last - k.first
	tf.Entries = slices.Clip(tf.Entries)
	return tf, nil
}

// detectTrace peeks at the first non-empty line of br.
func detectTrace(br *bufio.Reader, name string) (record.TraceFormat, error) {
	for n := 512; ; n *= 2 {
		head, err := br.Peek(n)
		text := string(head)
		lead := len(text) - len(strings.TrimLeft(text, " \t\r\n"))
		line := 1 + strings.Count(text[:lead], "\n") // of the first non-empty line
		if i := strings.IndexByte(text[lead:], '\n'); i >= 0 || err != nil {
			text = strings.TrimSpace(text)
			if j := strings.IndexByte(text, '\n'); j >= 0 {
				text = text[:j]
			}
			switch {
			case strings.HasPrefix(text, "{"):
				return record.TraceMooncake, nil
			case strings.Contains(text, "Request tokens"):
				return record.TraceBurstGPT, nil
			case strings.Contains(text, "ContextTokens"):
				return record.TraceAzure, nil
			case text == "":
				return "", fmt.Errorf("%s: empty trace file", name)
			}
			return "", fmt.Errorf("%s:%d: not a trace this reads: want Mooncake JSONL ({\"timestamp\": …}), a BurstGPT CSV header (Timestamp,Model,Request tokens,…) or an Azure one (TIMESTAMP,ContextTokens,GeneratedTokens); or set workload.trace.format", name, line)
		}
		if n >= maxTraceLine {
			return "", fmt.Errorf("%s:%d: line longer than %d bytes", name, line, maxTraceLine)
		}
	}
}

// mooncakeLine is one line of a Mooncake trace.
type mooncakeLine struct {
	Timestamp    *float64   `json:"timestamp"`
	InputLength  *jsonCount `json:"input_length"`
	OutputLength *jsonCount `json:"output_length"`
	HashIDs      []int64    `json:"hash_ids"`
}

// parseMooncake reads Mooncake JSONL: every line needs timestamp (ms, ≥ 0), input_length ≥ 1
// and output_length ≥ 0 (0 is skipped: nothing to generate); hash_ids are optional.
func parseMooncake(br *bufio.Reader, name string, k *traceSink) error {
	tf := k.tf
	sc := bufio.NewScanner(br)
	sc.Buffer(make([]byte, 0, 1<<16), maxTraceLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		var m mooncakeLine
		if err := json.Unmarshal(b, &m); err != nil { // one object, nothing after it
			return fmt.Errorf("%s:%d: not a Mooncake trace line: %v", name, line, err)
		}
		switch {
		case m.Timestamp == nil || m.InputLength == nil || m.OutputLength == nil:
			return fmt.Errorf("%s:%d: a Mooncake line needs timestamp, input_length and output_length", name, line)
		case !(*m.Timestamp >= 0) || math.IsInf(*m.Timestamp, 0) || *m.Timestamp > 1e12:
			return fmt.Errorf("%s:%d: timestamp %v: want milliseconds ≥ 0", name, line, *m.Timestamp)
		}
		in, err := tokenField("input_length", string(*m.InputLength), 1)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		out, err := tokenField("output_length", string(*m.OutputLength), 0)
		if err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		if out == 0 {
			tf.skip("output_length 0")
			continue
		}
		if err := k.add(TraceEntry{At: time.Duration(math.Round(*m.Timestamp * 1e6)), InputTokens: int32(in),
			OutputTokens: int32(out), HashIDs: m.HashIDs, Line: int32(line)}); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return nil
}

// skip counts a row left out, keeping the first reason.
func (tf *TraceFile) skip(why string) {
	tf.Skipped++
	if tf.SkipReason == "" {
		tf.SkipReason = why
	}
}

// traceColumns are the columns a CSV trace needs: time, input and output length.
var traceColumns = map[record.TraceFormat][3]string{
	record.TraceBurstGPT: {"Timestamp", "Request tokens", "Response tokens"},
	record.TraceAzure:    {"TIMESTAMP", "ContextTokens", "GeneratedTokens"},
}

// parseTraceCSV reads a BurstGPT or Azure CSV: a header naming the columns (any order, more
// columns allowed), then one request a row. BurstGPT rows with 0 response tokens are failed
// requests: skipped and counted.
func parseTraceCSV(br *bufio.Reader, name string, format record.TraceFormat, k *traceSink) error {
	cr := csv.NewReader(br)
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("%s:1: %s trace header: %w", name, format, err)
	}
	want := traceColumns[format]
	var col [3]int
	for k, w := range want {
		col[k] = slices.IndexFunc(header, func(h string) bool { return strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) == w })
		if col[k] < 0 {
			return fmt.Errorf("%s:1: %s trace header %q has no column %q (want %s)", name, format, strings.Join(header, ","), w, strings.Join(want[:], ","))
		}
	}
	tf := k.tf
	var t0 time.Time
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return fmt.Errorf("%s:%d: %v", name, pe.Line, pe.Err)
			}
			return fmt.Errorf("%s: %v", name, err)
		}
		line, _ := cr.FieldPos(0) // only after a record was read
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) <= max(col[0], col[1], col[2]) {
			return fmt.Errorf("%s:%d: %d fields: the header has %d", name, line, len(rec), len(header))
		}
		e := TraceEntry{Line: int32(line)}
		if format == record.TraceAzure {
			t, err := parseAzureTime(strings.TrimSpace(rec[col[0]]))
			if err != nil {
				return fmt.Errorf("%s:%d: TIMESTAMP %q: %v", name, line, rec[col[0]], err)
			}
			if t0.IsZero() {
				t0 = t
			}
			e.At = t.Sub(t0)
		} else {
			s, err := strconv.ParseFloat(strings.TrimSpace(rec[col[0]]), 64)
			if err != nil || !(s >= 0) || s > 1e9 {
				return fmt.Errorf("%s:%d: Timestamp %q: want seconds ≥ 0 from the trace's start", name, line, rec[col[0]])
			}
			e.At = time.Duration(math.Round(s * 1e9))
		}
		var bad string
		e.InputTokens, bad = traceCount(rec[col[1]], want[1])
		if bad == "" {
			e.OutputTokens, bad = traceCount(rec[col[2]], want[2])
		}
		if bad != "" {
			return fmt.Errorf("%s:%d: %s", name, line, bad)
		}
		switch {
		case e.OutputTokens == 0 && format == record.TraceBurstGPT:
			tf.skip("failed requests (0 response tokens)")
		case e.OutputTokens == 0:
			tf.skip("0 generated tokens")
		case e.InputTokens == 0:
			tf.skip("0 prompt tokens")
		default:
			if err := k.add(e); err != nil {
				return err
			}
		}
	}
	return nil
}

// traceCount parses a token count ≥ 0 of column name (tokenField); bad says what is wrong.
func traceCount(v, name string) (n int32, bad string) {
	c, err := tokenField(name, strings.TrimSpace(v), 0)
	if err != nil {
		return 0, err.Error()
	}
	return int32(c), ""
}

// parseAzureTime parses an Azure trace TIMESTAMP: "2023-11-16 18:15:46.6805900" (2023: UTC,
// up to 7 fractional digits; Go's parser takes any fractional second after the seconds),
// "2024-05-10 00:00:00.009930+00:00" (2024: with a UTC offset), or RFC 3339.
func parseAzureTime(v string) (time.Time, error) {
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05Z07"} {
		if t, err := time.Parse(layout, v); err == nil {
			return t, nil
		}
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, errors.New("want a datetime such as 2023-11-16 18:15:46.6805900")
	}
	return t, nil
}
