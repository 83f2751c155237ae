package live

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// The status line is built of whole fields, each a value with its unit ("761 tok/s", "TTFT
// p50 12.0ms"): a line too long for the terminal leaves out fields whole, the least needed
// first, and never cuts one, so no number loses digits or its unit at any width.

// statusField is one field of the status line: its text; its group (the level's own fields
// are two spaces apart, a group's others ", " apart, groups " · " apart); and its rank, the
// order in which fields are left out when the line does not fit (the highest rank first).
type statusField struct {
	text  string
	group int
	rank  int
}

// The groups of the status line's fields.
const (
	groupLevel    = iota // which level, its phase and time
	groupProgress        // the whole sweep's progress and time left
	groupLive            // the level's live numbers
)

// The ranks of the status line's fields, the most needed first: the level and its load, the
// phase, the live rate and TTFT (also of a rate level), the sweep's progress, its ETA, the
// completions.
const (
	rankLevel = iota
	rankLoad
	rankPhase
	rankRate
	rankTTFT
	rankProgress
	rankETA
	rankDone
)

// fitFields joins fields into a line shorter than width (width − 1 characters at most: a line
// that fills the last column leaves some terminals' cursor on the next line), leaving out
// whole fields, highest rank first (of equal ranks the later one), until it fits; "" when not
// even one field fits.
func fitFields(fields []statusField, width int) string {
	limit := max(0, width-1)
	shown := append([]statusField(nil), fields...)
	for {
		line := joinFields(shown)
		if utf8.RuneCountInString(line) <= limit || len(shown) == 0 {
			return line
		}
		drop := 0
		for i, f := range shown {
			if f.rank >= shown[drop].rank {
				drop = i
			}
		}
		shown = append(shown[:drop], shown[drop+1:]...)
	}
}

// joinFields joins fields with their groups' separators.
func joinFields(fields []statusField) string {
	var b strings.Builder
	for i, f := range fields {
		switch {
		case i == 0:
		case f.group != fields[i-1].group:
			b.WriteString(" · ")
		case f.group == groupLevel:
			b.WriteString("  ")
		default:
			b.WriteString(", ")
		}
		b.WriteString(f.text)
	}
	return b.String()
}

// statusFields are the status line's fields for s: "level 2/8", "c=4" (a rate level's "12.5
// req/s"), "measure 3s"; "sweep 45%", "ETA 1m02s"; and after the warmup "761 tok/s", "TTFT
// p50 12.0ms" once a request completed in the window, and "17 done". p.mu is held.
func (p *Display) statusFields(s sweep.LiveStats) []statusField {
	frac, left := p.eta.at(s.Elapsed)
	name, load := p.levelName(s)
	var out []statusField
	add := func(group, rank int, format string, args ...any) {
		out = append(out, statusField{fmt.Sprintf(format, args...), group, rank})
	}
	add(groupLevel, rankLevel, "%s", name)
	if load != "" {
		add(groupLevel, rankLoad, "%s", load)
	}
	add(groupLevel, rankPhase, "%s %s", s.Phase, etaString(s.Elapsed))
	add(groupProgress, rankProgress, "sweep %.0f%%", 100*frac)
	add(groupProgress, rankETA, "ETA %s", etaString(left))
	if s.Phase == record.PhaseWarmup {
		return out
	}
	if s.Completed > 0 {
		add(groupLive, rankRate, "%s tok/s", analysis.Float(s.OutputTPS).Format())
		if s.TTFTP50 > 0 {
			add(groupLive, rankTTFT, "TTFT p50 %s", durationText(s.TTFTP50))
		}
	}
	add(groupLive, rankDone, "%d done", s.Completed)
	return out
}

// levelName names the running level and its load: "level 2/8" and "c=4"; "added 1/2", a
// level the refiner added; "retry", a level run again at the load of one finished; "probe",
// a level of the --rates auto probe; a rate level's load is its offered rate, "12.5 req/s".
func (p *Display) levelName(s sweep.LiveStats) (name, load string) {
	rps := s.OfferedRPS
	if p.rates != nil && rps == 0 && !p.current && s.Index < len(p.rates) {
		rps = p.rates[s.Index] // LevelStarted's line, before the level's first live numbers
	}
	name = fmt.Sprintf("level %d/%d", s.Index+1, p.planned())
	switch {
	case p.probe:
		name = "probe"
	case p.current:
		name = fmt.Sprintf("added %d/%d", p.added, p.refine)
	case s.Index >= p.planned() || p.ran[levelLoad(s.Concurrency, rps)]:
		name = "retry" // also after the stop rules ended the planned levels early
	}
	switch {
	case p.rates == nil:
		return name, fmt.Sprintf("c=%d", s.Concurrency)
	case rps == 0:
		return name, ""
	}
	return name, fmt.Sprintf("%.4g req/s", rps)
}

// levelLoad is a level's load, the key of Display.ran: its offered rate on a rate level,
// else its concurrency.
func levelLoad(concurrency int, offeredRPS float64) float64 {
	if offeredRPS > 0 {
		return offeredRPS
	}
	return float64(concurrency)
}

// durationText formats a latency with three significant digits and its unit: "0.85ms",
// "14.1ms", "512ms", "2.57s".
func durationText(d time.Duration) string {
	if d < 999500*time.Microsecond {
		return analysis.Float(float64(d)/1e6).Format() + "ms"
	}
	return analysis.Float(d.Seconds()).Format() + "s"
}
