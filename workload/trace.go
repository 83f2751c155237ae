package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Trace replay (DESIGN §3.9): a rate sweep whose levels replay a window of a recorded trace,
// level i with the arrival times divided by its time scale s_i (s = 2 is twice the recorded
// traffic), offering s_i × the window's mean rate.

// defaultBlockTokens is workload.trace.block_tokens' default: the tokens of one Mooncake
// hash_ids block (512 in Mooncake's published traces).
const defaultBlockTokens = 512

// maxTimeScale bounds a time scale (sweep.time_scales, --time-scale) from above, and
// 1/maxTimeScale from below.
const maxTimeScale = 1e4

// TraceConfig is workload.trace: the trace a rate sweep replays.
type TraceConfig struct {
	// File is the trace file; empty means no trace replay.
	File string `yaml:"file"`
	// Format is auto ("" is the same), mooncake, burstgpt or azure.
	Format record.TraceFormat `yaml:"format,omitempty"`
	// Window is the slice replayed, "START-END", durations from the trace's first arrival
	// ("10m-20m", "30s-", "-5m"); empty is the whole trace.
	Window string `yaml:"window,omitempty"`
	// BlockTokens is the tokens of one hash_ids block (Mooncake); 0 means defaultBlockTokens.
	BlockTokens int `yaml:"block_tokens,omitempty"`
}

// Enabled reports whether a trace is replayed.
func (c TraceConfig) Enabled() bool { return c.File != "" }

// blockTokens returns BlockTokens or its default.
func (c TraceConfig) blockTokens() int {
	if c.BlockTokens > 0 {
		return c.BlockTokens
	}
	return defaultBlockTokens
}

// Validate reports every problem of the trace's settings, each prefixed with its key
// (workload.trace.format, …). It does not open the file.
func (c TraceConfig) Validate() []error {
	var errs []error
	if !c.Enabled() {
		if c != (TraceConfig{}) {
			errs = append(errs, errors.New("workload.trace.file: missing: the trace's other keys need the file they describe"))
		}
		return errs
	}
	switch c.Format {
	case "", record.TraceAuto, record.TraceMooncake, record.TraceBurstGPT, record.TraceAzure:
	default:
		errs = append(errs, fmt.Errorf("workload.trace.format: %q: must be auto, mooncake, burstgpt or azure", c.Format))
	}
	if _, _, err := parseTraceWindow(c.Window); err != nil {
		errs = append(errs, fmt.Errorf("workload.trace.window: %w", err))
	}
	if c.BlockTokens < 0 || c.BlockTokens > 1<<20 {
		errs = append(errs, fmt.Errorf("workload.trace.block_tokens: is %d: must be in [1, %d] (0 = %d)", c.BlockTokens, 1<<20, defaultBlockTokens))
	}
	return errs
}

// parseTraceWindow parses a window "START-END" of durations from the trace's first arrival
// ("10m-20m"; either side may be empty: "30s-" to the end, "-5m" from the start). end 0 means
// the trace's end. Empty is the whole trace.
func parseTraceWindow(s string) (start, end time.Duration, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q: want START-END, durations from the trace's first arrival such as 10m-20m", s)
	}
	parse := func(v string) (time.Duration, error) {
		if v = strings.TrimSpace(v); v == "" {
			return 0, nil
		}
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("%q: %q is not a duration ≥ 0 such as 90s or 10m (want START-END such as 10m-20m)", s, v)
		}
		return d, nil
	}
	if start, err = parse(a); err == nil {
		end, err = parse(b)
	}
	if err == nil && end > 0 && end <= start {
		err = fmt.Errorf("%q: the end must be after the start", s)
	}
	return start, end, err
}

// Trace is the window of a trace a sweep replays: its requests, arrival times from the
// window's start, and one pass's length. It is immutable once built.
type Trace struct {
	Info    record.TraceInfo
	entries []TraceEntry
	pass    time.Duration
	block   int
}

// LoadTrace reads c.File and slices its window (errors name the file and line). The window
// is cut while parsing, so only its rows are held; a file whose arrivals are out of time
// order is read again whole and sorted. Info records the file's absolute path and the
// SHA-256 of its content.
func LoadTrace(c TraceConfig) (*Trace, error) {
	if errs := c.Validate(); len(errs) > 0 {
		return nil, fmt.Errorf("sweep: trace: %w", errors.Join(errs...))
	}
	f, err := os.Open(c.File)
	if err != nil {
		return nil, fmt.Errorf("sweep: trace: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	tf, err := ParseTraceIn(io.TeeReader(f, h), c.File, c.Format, c.Window)
	if traceUnordered(err) {
		h.Reset()
		if _, err = f.Seek(0, io.SeekStart); err == nil {
			tf, err = ParseTrace(io.TeeReader(f, h), c.File, c.Format)
		}
	}
	if err == nil {
		_, err = io.Copy(h, f) // what the parser left unread
	}
	if err != nil {
		return nil, fmt.Errorf("sweep: trace: %w", err)
	}
	t, err := NewTrace(tf, c)
	if err != nil {
		return nil, err
	}
	t.Info.SHA256 = hex.EncodeToString(h.Sum(nil))
	if t.Info.Path, err = filepath.Abs(c.File); err != nil {
		return nil, fmt.Errorf("sweep: trace: %w", err)
	}
	return t, nil
}

// NewTrace returns the window c.Window of the parsed trace tf. The window [START, END) keeps
// the requests arriving in it; a pass lasts END − START when the trace goes on past END,
// else (open-ended, or END past the trace's last arrival) from START to the window's last
// arrival plus one mean gap of its arrivals, so that passes repeat at the window's mean rate
// — at most END − START (an END past the data: Info.Note says so). A window needs two
// requests.
func NewTrace(tf *TraceFile, c TraceConfig) (*Trace, error) {
	start, end, err := parseTraceWindow(c.Window)
	if err != nil {
		return nil, fmt.Errorf("sweep: trace %s: window %w", c.File, err)
	}
	total, fileLast := tf.Total, tf.Last
	if total == 0 && len(tf.Entries) > 0 { // a TraceFile built by hand
		total, fileLast = len(tf.Entries), tf.Entries[len(tf.Entries)-1].At
	}
	t := &Trace{block: c.blockTokens()}
	for _, e := range tf.Entries {
		if e.At >= start && (end == 0 || e.At < end) {
			e.At -= start
			t.entries = append(t.entries, e)
		}
	}
	n := len(t.entries)
	if n < 2 {
		return nil, fmt.Errorf("sweep: trace %s: window %q holds %d requests of the %d (the trace's arrivals span %v): a replay needs at least 2", c.File, c.Window, n, total, fileLast)
	}
	last := t.entries[n-1].At
	span := last - t.entries[0].At
	if span <= 0 {
		return nil, fmt.Errorf("sweep: trace %s: the window's %d requests all arrive at once: no rate to scale", c.File, n)
	}
	t.pass = last + time.Duration(math.Round(float64(span)/float64(n-1)))
	var note string
	switch {
	case end > 0 && end <= fileLast:
		t.pass = end - start // the trace goes on past the window: its length is the window's
	case end > 0:
		t.pass = min(t.pass, end-start)
		note = fmt.Sprintf("the window's end %v is past the trace's last arrival (%v): a pass ends with the data, %v after the window's start", end, fileLast.Round(time.Millisecond), t.pass.Round(time.Millisecond))
	}
	if tf.Unordered > 0 {
		note = strings.TrimPrefix(note+fmt.Sprintf("; its arrivals are not in time order (%d earlier than one before them, the first at line %d): replayed sorted by arrival",
			tf.Unordered, tf.UnorderedLine), "; ")
	}
	t.Info = record.TraceInfo{File: c.File, Format: tf.Format, Window: c.Window, Requests: n, Skipped: tf.Skipped,
		SkipReason: tf.SkipReason, DurationS: t.pass.Seconds(), MeanRPS: float64(n) / t.pass.Seconds(), Note: note}
	t.info()
	return t, nil
}

// info fills the window's mean lengths and block statistics.
func (t *Trace) info() {
	var in, out float64
	seen := map[int64]bool{}
	blocks, shared := 0, 0
	for _, e := range t.entries {
		in += float64(e.InputTokens)
		out += float64(e.OutputTokens)
		for _, h := range e.HashIDs {
			blocks++
			if seen[h] {
				shared++
			}
			seen[h] = true
		}
	}
	n := float64(len(t.entries))
	t.Info.MeanInputTokens, t.Info.MeanOutputTokens = in/n, out/n
	if blocks > 0 {
		t.Info.BlockTokens = t.block
		t.Info.SharedBlockShare = float64(shared) / float64(blocks)
	}
}

// Len returns the requests of one pass.
func (t *Trace) Len() int { return len(t.entries) }

// Entry returns request i of the pass (0 ≤ i < Len), its At from the window's start.
func (t *Trace) Entry(i int) TraceEntry { return t.entries[i] }

// Pass returns one pass's length at scale 1.
func (t *Trace) Pass() time.Duration { return t.pass }

// Rate returns the offered rate of time scale s: s × the window's mean rate, in requests/s.
func (t *Trace) Rate(s float64) float64 { return s * t.Info.MeanRPS }

// Scale returns the time scale of an offered rate rps: rps ÷ the window's mean rate, rounded
// to 12 significant digits (Rate's product and back).
func (t *Trace) Scale(rps float64) float64 {
	s := rps / t.Info.MeanRPS
	v, _ := strconv.ParseFloat(strconv.FormatFloat(s, 'g', 12, 64), 64)
	return v
}

// Gaps returns the arrival gaps of a replay at time scale s > 0: arrival k is request k mod
// Len of pass p = k div Len, due (p × Pass + At) ÷ s after the level's start, rounded to the
// nanosecond from the exact sum (the gaps are its steps: no drift). Not safe for concurrent
// use.
func (t *Trace) Gaps(s float64) func() time.Duration {
	var k int
	var at int64
	n := len(t.entries)
	return func() time.Duration {
		p, i := k/n, k%n
		k++
		next := int64(math.Round((float64(p)*float64(t.pass) + float64(t.entries[i].At)) / s))
		d := next - at
		at = next
		return time.Duration(d)
	}
}

// maxTimeScales bounds the levels of a trace replay, as sweep bounds levels and rates.
const maxTimeScales = 100

// ValidateTimeScales reports time scales outside [1/maxTimeScale, maxTimeScale] or not
// finite, scales that do not strictly increase (as sweep.rates must), more than maxTimeScales
// and an empty list; key names them.
func ValidateTimeScales(key string, scales []float64) []error {
	var errs []error
	if len(scales) == 0 {
		return []error{fmt.Errorf("%s: empty: give the time scales to replay the trace at, such as [1, 2, 4]", key)}
	}
	if len(scales) > maxTimeScales {
		return []error{fmt.Errorf("%s: %d time scales: at most %d (a sweep of more runs for hours; choose fewer)", key, len(scales), maxTimeScales)}
	}
	for i, s := range scales {
		if !(s >= 1/maxTimeScale && s <= maxTimeScale) {
			errs = append(errs, fmt.Errorf("%s[%d]: %v: a time scale must be in [%g, %g] (2 = twice the recorded traffic)", key, i, s, 1/maxTimeScale, float64(maxTimeScale)))
		} else if i > 0 && !(s > scales[i-1]) {
			errs = append(errs, fmt.Errorf("%s[%d]: %v after %v: the time scales must strictly increase", key, i, s, scales[i-1]))
		}
	}
	return errs
}
