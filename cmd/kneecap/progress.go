package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// levelSummary holds the numbers of one level shown in the progress table, computed over the
// level's measurement window [W0, W1) with DESIGN §1's definitions.
type levelSummary struct {
	Concurrency int
	// OfferedRPS is an arrival-rate level's offered rate (0 on a closed-loop level), shown in
	// place of its concurrency (the cap on requests in flight).
	OfferedRPS float64
	// Requests counts requests sent inside the window; Errors those of them that failed.
	Requests, Errors int
	// ErrorRate is Errors ÷ Requests (0 without requests).
	ErrorRate float64
	// OutputTPS is output tokens that arrived inside the window ÷ window length, tokens/s.
	OutputTPS float64
	// QPS is successful completions inside the window ÷ window length, requests/s.
	QPS float64
	// TTFT, TPOT and E2E percentiles over successful requests sent inside the window.
	TTFTP50, TTFTP95, TPOTP50, E2EP50 time.Duration
	Steady, Interrupted               bool
	// Sustainable is an arrival-rate level's verdict (analysis.RateLevel.Sustainable).
	Sustainable bool
	// Part reports a shard's part of a level, whose verdict only the merge gives.
	Part bool
}

// summarizeLevel computes a level's table numbers from its records with the analysis
// package's definitions (DESIGN §1), so the live table, the stop rules and analysis.json agree.
func summarizeLevel(l record.Level) levelSummary {
	run := l.Run
	lv := analysis.Summarize([]record.Level{l}, analysis.DefaultOptions())[0]
	num := func(f analysis.Float) float64 {
		if !f.OK() {
			return 0
		}
		return float64(f)
	}
	dur := func(msec analysis.Float) time.Duration { return time.Duration(num(msec) * float64(time.Millisecond)) }
	return levelSummary{
		Concurrency: run.Concurrency,
		OfferedRPS:  run.OfferedRPS,
		Requests:    lv.Requests,
		Errors:      lv.Errors,
		ErrorRate:   num(lv.ErrorRate),
		OutputTPS:   num(lv.OutputTPS),
		QPS:         num(lv.QPS),
		TTFTP50:     dur(lv.TTFT.P50),
		TTFTP95:     dur(lv.TTFT.P95),
		TPOTP50:     dur(lv.TPOT.P50),
		E2EP50:      dur(lv.E2E.P50),
		Steady:      run.Steady,
		Interrupted: run.Interrupted,
		Sustainable: !lv.IsRate() || lv.Sustainable,
		Part:        run.Shard != nil,
	}
}

// ms formats a duration in milliseconds with three significant digits.
func ms(d time.Duration) string {
	v := float64(d) / 1e6
	switch {
	case v == 0:
		return "-"
	case v < 10:
		return fmt.Sprintf("%.2fms", v)
	case v < 100:
		return fmt.Sprintf("%.1fms", v)
	default:
		return fmt.Sprintf("%.0fms", v)
	}
}

// progress is the sweep's Observer. On a terminal, one status line for the running level,
// redrawn in place (erased, then written, cut to the terminal's width so it never wraps):
// its phase and time, the whole sweep's progress and ETA, the live output TPS and TTFT p50.
// On a terminal or not, a row of the level table (report.LevelTable, the columns of the
// final summary) when each level ends. Everything goes to w (stderr); stdout is kept for
// results.
type progress struct {
	w   io.Writer
	tty bool
	// width returns the terminal's width in columns (env.columns), read at each redraw.
	width func() int
	// wide is --wide: every column of the level table.
	wide   bool
	levels []int
	// rates are a rate sweep's offered rates (nil for a concurrency sweep).
	rates []float64
	proto sweep.Protocol
	// hit shows the prefix-cache hit column from the first level on (expectsPrefixCache),
	// else only when the first level has a hit rate.
	hit bool
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
	// nextRate is the added rate level's offered rate, as announced.
	nextRate string
}

var _ sweep.Observer = (*progress)(nil)

// newProgress returns the progress display for a sweep of levels with protocol proto, 80
// columns wide until width is set.
func newProgress(w io.Writer, tty bool, levels []int, proto sweep.Protocol) *progress {
	return &progress{w: w, tty: tty, levels: levels, proto: proto, now: time.Now,
		width: func() int { return defaultColumns },
		eta:   newSweepETA(proto.Warmup, proto.Duration, proto.Cooldown)}
}

// planned is the number of planned levels (concurrencies or rates).
func (p *progress) planned() int {
	if p.rates != nil {
		return len(p.rates)
	}
	return len(p.levels)
}

// LevelStarted shows the level's status line (on a terminal).
func (p *progress) LevelStarted(index, concurrency int) {
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
func (p *progress) Live(s sweep.LiveStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.draw(s)
}

// draw erases the status line and writes s's, on a terminal. p.mu is held.
func (p *progress) draw(s sweep.LiveStats) {
	if !p.tty {
		return
	}
	line := fitLine(p.describe(s), p.width())
	fmt.Fprint(p.w, clearLine+line)
	p.status = line
}

// describe is the status line: "level 2/8  c=4  measure 3.2s · sweep 45%, ETA 1m02s ·
// 761.8 tok/s, TTFT p50 12.0ms, 17 done".
func (p *progress) describe(s sweep.LiveStats) string {
	frac, left := p.eta.at(s.Elapsed)
	d := fmt.Sprintf("level %d/%d  c=%d", s.Index+1, p.planned(), s.Concurrency)
	if p.current {
		d = fmt.Sprintf("added %d/%d  c=%d", p.added, p.refine, s.Concurrency)
	}
	if p.rates != nil {
		d = p.describeRate(s.Index)
	}
	d += fmt.Sprintf("  %s %s · sweep %.0f%%, ETA %s", s.Phase, etaString(s.Elapsed), 100*frac, etaString(left))
	if s.Phase != record.PhaseWarmup {
		d += fmt.Sprintf(" · %.1f tok/s, TTFT p50 %s, %d done", s.OutputTPS, ms(s.TTFTP50), s.Completed)
	}
	return d
}

// expectsPrefixCache reports whether cfg's sweep is one a prefix cache serves, so the live
// level table shows the hit column from its first level (which may measure none yet):
// shared_prefix, prefix_cache, sessions, a trace with hash_ids, or the simulator with
// prefix_caching.
func expectsPrefixCache(cfg *config.Config, w workload.Workload) bool {
	wl := cfg.Workload
	if wl.SharedPrefix.Count > 0 || wl.PrefixCache || wl.Sessions != nil || cfg.Target.URL == "" && cfg.Simulator.PrefixCaching {
		return true
	}
	tw, ok := w.(*workload.TraceWorkload)
	return ok && tw.Trace().Info.BlockTokens > 0
}

// LevelFinished erases the status line and writes the level's table row.
func (p *progress) LevelFinished(l record.Level) {
	run := l.Run
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	lv := analysis.Summarize([]record.Level{l}, analysis.DefaultOptions())[0]
	if p.table == nil {
		lengths := lv.InputTokens.Mean.OK() || lv.OutputTokens.Mean.OK()
		t := report.NewLevelTable(run.OfferedRPS > 0, p.wide, lengths)
		if (p.hit || lv.PrefixHitRate().OK()) && (p.wide || run.OfferedRPS == 0) {
			t = t.WithPrefixCache() // as the final table (report.consoleHit)
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

// adding announces the next added level (sweep.refine), or that none is needed (c = 0).
func (p *progress) adding(c int, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if c <= 0 {
		p.noMore = true
		what := "no level added"
		if p.added > 0 {
			what = "no further level needed"
		}
		fmt.Fprintf(p.w, "kneecap: %s: each answer found (SLO limit, knee, TTFT blow-up) lies within %.0f%% of a level already run, next to one with no integer between, or outside the range run\n",
			what, 100*analysis.RefineTolerance)
		return
	}
	p.next = true
	fmt.Fprintf(p.w, "kneecap: adding concurrency %d (%d of at most %d): %s\n", c, p.added+1, p.refine, why)
}

// stopAdding says why no further level is added (an added level failed).
func (p *progress) stopAdding(why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	p.noMore = true
	fmt.Fprintf(p.w, "kneecap: no more levels added: %s\n", why)
}

// announcingRefiner is the sweep's refiner (analysis.Refiner) that says on the console which
// level it adds and why, or why it adds none.
type announcingRefiner struct {
	sweep.Refiner
	prog *progress
}

// Refine implements sweep.Refiner.
func (r announcingRefiner) Refine(levels []record.Level) (float64, string) {
	x, why := r.Refiner.Refine(levels)
	switch {
	case x <= 0 && why != "":
		r.prog.stopAdding(why)
	case r.prog.proto.RateMode():
		r.prog.addingRate(x, why)
	default:
		r.prog.adding(int(x), why)
	}
	return x, why
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
func (p *progress) clear() {
	if p.status == "" {
		return
	}
	fmt.Fprint(p.w, clearLine)
	p.status = ""
}

// close erases a status line left by an interrupted level.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
}
