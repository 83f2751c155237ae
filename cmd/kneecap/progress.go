package main

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/sweep"
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
func summarizeLevel(l sweep.Level) levelSummary {
	run := l.Run
	lv := analysis.Summarize([]sweep.Level{l}, analysis.DefaultOptions())[0]
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

const tableHeader = "%6s %8s %6s %10s %8s %9s %9s %9s %9s  %s\n"

// writeTableHeader writes the level table's column names.
func writeTableHeader(w io.Writer, rate bool) {
	first := "conc"
	if rate {
		first = "req/s" // an arrival-rate level's offered rate
	}
	fmt.Fprintf(w, tableHeader, first, "requests", "errors", "out tok/s", "QPS", "TTFT p50", "TTFT p95", "TPOT p50", "E2E p50", "steady")
}

// writeTableRow writes one level of the table.
func writeTableRow(w io.Writer, s levelSummary) {
	steady := "yes"
	switch {
	case s.Interrupted:
		steady = "interrupted"
	case s.Part:
		steady = "part" // a shard's part of the level: kneecap merge gives the verdict
	case !s.Steady:
		steady = "NO"
	}
	first := fmt.Sprintf("%6d", s.Concurrency)
	if s.OfferedRPS > 0 {
		first = fmt.Sprintf("%6.4g", s.OfferedRPS)
		if !s.Sustainable {
			steady += ", not sustainable"
		}
	}
	fmt.Fprintf(w, "%s %8d %6d %10.1f %8.2f %9s %9s %9s %9s  %s\n", first, s.Requests, s.Errors,
		s.OutputTPS, s.QPS, ms(s.TTFTP50), ms(s.TTFTP95), ms(s.TPOTP50), ms(s.E2EP50), steady)
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

// progress is the sweep's Observer: on a terminal, a progress bar per level whose
// description shows the live output TPS and TTFT p50; otherwise nothing live. On both, a
// table row when each level ends. Everything goes to w (stderr); stdout is kept for results.
type progress struct {
	w      io.Writer
	tty    bool
	levels []int
	// rates are a rate sweep's offered rates (nil for a concurrency sweep).
	rates []float64
	proto sweep.Protocol

	mu      sync.Mutex
	bar     *progressbar.ProgressBar
	header  bool
	started time.Time
	// refine is the number of levels the sweep may add (sweep.refine); added counts those
	// started (resumed ones included); next is set between adding and the added level's
	// start, current while an added level runs.
	refine        int
	added         int
	next, current bool
	// nextRate is the added rate level's offered rate, as announced.
	nextRate string
}

var _ sweep.Observer = (*progress)(nil)

// newProgress returns the progress display for a sweep of levels with protocol proto.
func newProgress(w io.Writer, tty bool, levels []int, proto sweep.Protocol) *progress {
	return &progress{w: w, tty: tty, levels: levels, proto: proto}
}

// expected is the planned length of a level in milliseconds: warmup + duration.
func (p *progress) expected() int64 {
	return max(1, (p.proto.Warmup + p.proto.Duration).Milliseconds())
}

// LevelStarted opens the level's progress bar (on a terminal).
func (p *progress) LevelStarted(index, concurrency int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.started = time.Now()
	p.current = p.next
	if p.next {
		p.added++
		p.next = false
	}
	if !p.tty {
		return
	}
	p.finishBar()
	p.bar = progressbar.NewOptions64(p.expected(),
		progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetWidth(24),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(false),
		progressbar.OptionSetDescription(p.describe(index, concurrency, sweep.PhaseWarmup, 0, 0, 0)),
	)
	_ = p.bar.RenderBlank()
}

func (p *progress) describe(index, conc int, phase sweep.Phase, tps float64, ttft time.Duration, done int) string {
	d := fmt.Sprintf("level %d/%d  c=%-4d %-7s", index+1, len(p.levels), conc, phase)
	if p.current {
		d = fmt.Sprintf("added %d/%d  c=%-4d %-7s", p.added, p.refine, conc, phase)
	}
	if p.rates != nil {
		d = p.describeRate(index, phase)
	}
	if phase != sweep.PhaseWarmup {
		d += fmt.Sprintf(" %7.1f tok/s  TTFT p50 %s  %d done", tps, ms(ttft), done)
	}
	return d
}

// Live updates the bar's description with the live numbers.
func (p *progress) Live(s sweep.LiveStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.bar == nil {
		return
	}
	p.bar.Describe(p.describe(s.Index, s.Concurrency, s.Phase, s.OutputTPS, s.TTFTP50, s.Completed))
	el := s.Elapsed.Milliseconds()
	if el > p.bar.GetMax64() {
		// The window is being extended until it is steady (up to max_duration).
		p.bar.ChangeMax64(max(el+1, (p.proto.Warmup + p.proto.MaxDuration).Milliseconds()))
	}
	_ = p.bar.Set64(el)
}

// LevelFinished clears the bar and writes the level's table row.
func (p *progress) LevelFinished(l sweep.Level) {
	run := l.Run
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishBar()
	if !p.header {
		writeTableHeader(p.w, run.OfferedRPS > 0)
		p.header = true
	}
	writeTableRow(p.w, summarizeLevel(l))
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
	p.finishBar()
	if c <= 0 {
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
	p.finishBar()
	fmt.Fprintf(p.w, "kneecap: no more levels added: %s\n", why)
}

// announcingRefiner is the sweep's refiner (analysis.Refiner) that says on the console which
// level it adds and why, or why it adds none.
type announcingRefiner struct {
	sweep.Refiner
	prog *progress
}

// Refine implements sweep.Refiner.
func (r announcingRefiner) Refine(levels []sweep.Level) (int, string) {
	c, why := r.Refiner.Refine(levels)
	if c <= 0 && why != "" {
		r.prog.stopAdding(why)
	} else {
		r.prog.adding(c, why)
	}
	return c, why
}

// extendedNote says why a level's window ran well past the configured duration (more than
// 10%): the window grows until the level is steady and has min_requests completions, up to
// max_duration, which a user who asked for --duration 6s otherwise learns only from the clock.
func extendedNote(run sweep.LevelRun, proto sweep.Protocol) string {
	win := run.Window()
	if proto.Duration <= 0 || win <= proto.Duration+proto.Duration/10 || run.Shard != nil {
		return "" // a shard's window is max_duration by schedule: the merge chooses the window
	}
	return fmt.Sprintf("window %s, past duration %s: a window grows until the level is steady with at least min_requests %d completions, up to max_duration %s",
		win.Round(100*time.Millisecond), proto.Duration, proto.MinRequests, proto.MaxDuration)
}

// finishBar removes the current bar, if any. p.mu is held.
func (p *progress) finishBar() {
	if p.bar == nil {
		return
	}
	_ = p.bar.Finish()
	_ = p.bar.Clear()
	p.bar = nil
}

// close removes a bar left by an interrupted level.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.finishBar()
}
