// Package live is a sweep's live display on stderr: on a terminal, one status line for the
// running level, redrawn in place (statusline.go) with the whole sweep's progress and ETA
// (eta.go); on a terminal or not, a row of the level table (report.LevelTable, the columns of
// the final summary) when each level ends, the levels the refiner adds, and the line that
// says where the sweep stopped.
package live

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/sweep"
)

// DefaultColumns is the terminal width assumed when neither the terminal nor COLUMNS says.
const DefaultColumns = 80

// clearLine returns the cursor to the start of the line and erases it (CR, then EL: erase to
// the end of the line).
const clearLine = "\r\x1b[K"

// Terminal is where a display writes: stderr, whether it is a terminal, its width in columns
// (read at each redraw, so a resized window is followed) and --wide.
type Terminal struct {
	W     io.Writer
	TTY   bool
	Width func() int
	// Wide is --wide: every column of the level table.
	Wide bool
}

// Display is the sweep's Observer. On a terminal, one status line for the running level,
// redrawn in place (erased, then written, its fields left out whole to fit the terminal's
// width so it never wraps, statusline.go): its phase and time, the whole sweep's progress and
// ETA, the live output TPS and TTFT p50.
// On a terminal or not, a row of the level table (report.LevelTable, the columns of the
// final summary) when each level ends. Everything goes to w (stderr); stdout is kept for
// results.
type Display struct {
	w   io.Writer
	tty bool
	// width returns the terminal's width in columns (Terminal.Width), read at each redraw.
	width func() int
	// wide is --wide: every column of the level table.
	wide   bool
	levels []int
	// rates are a rate sweep's offered rates (nil for a concurrency sweep).
	rates []float64
	proto sweep.Protocol
	// hit shows the prefix-cache hit column from the first level on
	// (launch.Sweep.ExpectsPrefixCache), else only when the first level has a hit rate.
	hit bool
	// api is the sweep's API (target.api; empty: chat): an embeddings sweep's levels are
	// summarized and shown by input tokens/s and latency.
	api record.API
	// now is the clock of the levels' starts for the sweep's ETA (time.Now).
	now func() time.Time

	mu sync.Mutex
	// status is the status line on the terminal ("" when none is shown).
	status string
	eta    *sweepETA
	table  *report.LevelTable
	// refine is the number of levels the sweep may add (sweep.refine); added counts those
	// started (resumed ones included); next is set between adding and the added level's
	// start, current while an added level runs; noMore once the refiner adds no more.
	refine        int
	added         int
	next, current bool
	noMore        bool
	// probe: the levels are the --rates auto probe's.
	probe bool
	// ran holds the loads (concurrency, or offered rate) of the levels finished: a level
	// started again at one of them, not added, is a retry.
	ran map[float64]bool
}

var _ launch.Display = (*Display)(nil)

// display returns the display of a sweep of levels with protocol proto on t; hit shows the
// prefix-cache hit column from the first level on (launch.Sweep.ExpectsPrefixCache).
func display(t Terminal, levels []int, proto sweep.Protocol, hit bool) *Display {
	p := newDisplay(t.W, t.TTY, levels, proto)
	p.width, p.wide, p.hit = t.Width, t.Wide, hit
	return p
}

// Probe returns the display on t of the --rates auto probe of s, of levels with protocol
// proto (probeFirst).
func Probe(t Terminal, s *launch.Sweep, levels []int, proto sweep.Protocol) *Display {
	p := display(t, levels, proto, s.ExpectsPrefixCache())
	p.probeFirst(s.Cfg.Sweep)
	return p
}

// Sweep returns the display on t of sweep s; probe is its --rates auto probe's display (nil
// when none ran), whose progress it goes on from (goOnFrom).
func Sweep(t Terminal, s *launch.Sweep, probe *Display) *Display {
	p := display(t, s.Levels, s.Cfg.Sweep, s.ExpectsPrefixCache())
	p.added, p.refine, p.rates = s.Resume.Added, s.Cfg.Sweep.Refine, s.Rates
	p.api = s.Cfg.Target.API
	p.goOnFrom(probe, s.Cfg.Sweep)
	return p
}

// probeFirst makes p the display of the --rates auto probe of a rate sweep of protocol sw:
// its progress counts the rate levels that follow it, the rates --rates auto plans (as many
// as sweep.PlanRates's factors) and those refine may add, each after its cooldown.
func (p *Display) probeFirst(sw sweep.Protocol) {
	p.probe = true
	n := len(sweep.PlanRates(1)) + sw.Refine
	p.eta.later = time.Duration(n) * (sw.Cooldown + sw.Warmup + sw.Duration)
}

// goOnFrom makes p's progress, of levels of protocol sw, go on from the probe's display (nil:
// none ran): one progress from the probe's start to the sweep's end, which never goes back.
func (p *Display) goOnFrom(probe *Display, sw sweep.Protocol) {
	if probe != nil {
		p.eta = probe.eta.then(sw.Warmup, sw.Duration, sw.Cooldown)
	}
}

// newDisplay returns the display for a sweep of levels with protocol proto, DefaultColumns
// wide until width is set.
func newDisplay(w io.Writer, tty bool, levels []int, proto sweep.Protocol) *Display {
	return &Display{w: w, tty: tty, levels: levels, proto: proto, now: time.Now,
		width: func() int { return DefaultColumns },
		eta:   newSweepETA(proto.Warmup, proto.Duration, proto.Cooldown)}
}

// planned is the number of planned levels (concurrencies or rates).
func (p *Display) planned() int {
	if p.rates != nil {
		return len(p.rates)
	}
	return len(p.levels)
}

// LevelStarted shows the level's status line (on a terminal).
func (p *Display) LevelStarted(index, concurrency int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.current = p.next
	if p.next {
		p.added++
		p.next = false
	}
	after := p.refine - p.added
	if !p.current {
		after += p.planned() - index - 1
	}
	if p.noMore {
		after = max(0, p.planned()-index-1)
	}
	p.eta.started(p.now(), after)
	p.draw(sweep.LiveStats{Index: index, Concurrency: concurrency, Phase: record.PhaseWarmup})
}

// Live redraws the status line with the live numbers.
func (p *Display) Live(s sweep.LiveStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(s)
}

// draw erases the status line and writes s's, on a terminal. p.mu is held.
func (p *Display) draw(s sweep.LiveStats) {
	if !p.tty {
		return
	}
	line := fitFields(p.statusFields(s), p.width())
	fmt.Fprint(p.w, clearLine+line)
	p.status = line
}

// LevelFinished erases the status line and writes the level's table row.
func (p *Display) LevelFinished(l record.Level) {
	run := l.Run
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if p.ran == nil {
		p.ran = map[float64]bool{}
	}
	p.ran[levelLoad(run.Concurrency, run.OfferedRPS)] = true
	opts := analysis.DefaultOptions()
	opts.API = p.api
	lv := analysis.Summarize([]record.Level{l}, opts)[0]
	if p.table == nil {
		lengths := lv.InputTokens.Mean.OK() || lv.OutputTokens.Mean.OK()
		t := report.NewLevelTable(run.Mode().IsRate(), p.wide, lengths)
		if lv.Whole() {
			t = t.WholeAnswers()
		}
		if (p.hit || lv.PrefixHitRate().OK()) && (p.wide || run.OfferedRPS == 0) {
			t = t.WithPrefixCache() // as the final table (report.consoleHit)
		}
		if p.wide && (run.GPU != nil || lv.GPU != nil) {
			t = t.WithEnergy() // as the final --wide table (report.consoleEnergy)
		}
		if p.tty {
			t = t.Fit(p.width()) // whole columns on continuation lines, as the final table's
		}
		p.table = &t
		fmt.Fprint(p.w, t.Header())
	}
	fmt.Fprint(p.w, p.table.Row(&lv))
	if run.Shard != nil {
		fmt.Fprintf(p.w, "       note: this shard's part of the level: kneecap merge gives the level's verdict\n")
	}
	if n := extendedNote(run, p.proto); n != "" {
		fmt.Fprintf(p.w, "       note: %s\n", n)
	}
	for _, n := range run.Notes {
		fmt.Fprintf(p.w, "       note: %s\n", n)
	}
}

// Adding announces the next added level (sweep.refine), or that none is needed (c = 0).
func (p *Display) Adding(c int, why string) {
	p.announce(c > 0, fmt.Sprintf("concurrency %d", c), fmt.Sprintf("(SLO limit, knee, TTFT blow-up) lies within %.0f%% of a level already run, next to one with no integer between, or outside the range run",
		100*analysis.RefineTolerance), why)
}

// AddingRate announces the next added rate level (sweep.refine), or that none is needed.
func (p *Display) AddingRate(rps float64, why string) {
	rate := fmt.Sprintf("%.4g", rps)
	p.announce(rps > 0, rate+" requests/s", "(SLO limit, capacity, TTFT blow-up) lies within 5% of a rate already run, or outside the range run", why)
}

// announce says the level the refiner adds next and why (add), or that it adds none because
// each answer found lies where none says.
func (p *Display) announce(add bool, level, none, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if !add {
		p.noMore = true
		what := "no level added"
		if p.added > 0 {
			what = "no further level needed"
		}
		fmt.Fprintf(p.w, "kneecap: %s: each answer found %s\n", what, none)
		return
	}
	p.next = true
	fmt.Fprintf(p.w, "kneecap: adding %s (%d of at most %d): %s\n", level, p.added+1, p.refine, why)
}

// StopAdding says why no further level is added (an added level failed).
func (p *Display) StopAdding(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.noMore = true
	fmt.Fprintf(p.w, "kneecap: no more levels added: %s\n", why)
}

// extendedNote says why a level's window ran well past the configured duration (more than
// 10%): the window grows until the level is steady and has min_requests completions, up to
// max_duration, which a user who asked for --duration 6s otherwise learns only from the clock.
func extendedNote(run record.LevelRun, proto sweep.Protocol) string {
	win := run.Window()
	if proto.Duration <= 0 || win <= proto.Duration+proto.Duration/10 || run.Shard != nil {
		return "" // a shard's window is max_duration by schedule: the merge chooses the window
	}
	if run.TimeScale > 0 {
		for _, n := range run.Notes {
			if strings.Contains(n, "the level measures one pass") {
				return "" // the level's own note says why (one pass past max_duration)
			}
		}
		return fmt.Sprintf("window %s: a trace level measures whole passes of the trace's window ÷ its time scale (%.3g×), the fewest that reach duration %s",
			win.Round(100*time.Millisecond), run.TimeScale, proto.Duration)
	}
	return fmt.Sprintf("window %s, past duration %s: a window grows until the level is steady with at least min_requests %d completions, up to max_duration %s",
		win.Round(100*time.Millisecond), proto.Duration, proto.MinRequests, proto.MaxDuration)
}

// clear erases the status line, if one is shown. p.mu is held.
func (p *Display) clear() {
	if p.status == "" {
		return
	}
	fmt.Fprint(p.w, clearLine)
	p.status = ""
}

// Close erases a status line left by an interrupted level.
func (p *Display) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}

// Stopped says where the sweep of outcome out stopped and why, and the levels it ran again
// and added: "kneecap: stopped after 1m02.3s: REASON; then retried 64; then added 25, 102".
func (p *Display) Stopped(out sweep.Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "kneecap: stopped after %s: %s%s\n", out.Elapsed.Round(100*time.Millisecond), out.StopReason, addedNote(out))
}

// addedNote lists the levels a sweep ran again and added (an interrupted one is run again on
// --resume): "; then retried 64; then added 25, 102" (on a rate sweep, "; then added 20.7
// requests/s").
func addedNote(out sweep.Outcome) string {
	var added, retried []string
	for _, l := range out.Levels {
		name := strconv.Itoa(l.Concurrency)
		if l.Mode().IsRate() { // a rate level's concurrency is its cap
			name = strconv.FormatFloat(l.OfferedRPS, 'g', 3, 64) + " requests/s"
		}
		switch {
		case l.Interrupted:
		case l.RetryOf != nil:
			retried = append(retried, name)
		case l.Refine != "":
			added = append(added, name)
		}
	}
	var s string
	if len(retried) > 0 {
		s += "; then retried " + strings.Join(retried, ", ")
	}
	if len(added) > 0 {
		s += "; then added " + strings.Join(added, ", ")
	}
	return s
}
