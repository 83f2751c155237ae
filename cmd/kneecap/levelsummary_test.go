package main

import (
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// levelSummary holds the numbers of one level the tests check, computed over the level's
// measurement window [W0, W1) with DESIGN §1's definitions.
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
