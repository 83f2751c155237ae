package report

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// check is one validity check of a level: its measured value and whether it passes.
type check struct {
	Value string
	OK    bool
	Known bool
}

func (c check) String() string {
	if !c.Known {
		return dash
	}
	if c.OK {
		return c.Value
	}
	return c.Value + " ✗"
}

// maxIdentityErr is the relative error within which the identities of DESIGN §1 hold; the
// level thresholds are analysis.MinAchievedRatio and analysis.MaxLittlesLawError.
const maxIdentityErr = 0.10

// levelChecks are the validity checks and identities of one level.
type levelChecks struct {
	Achieved, Little, Steady, ClientBound check
	// E2EIdentity is |E2E − (TTFT + TPOT × (N_out − 1))| ÷ E2E over means.
	E2EIdentity check
	// QPSIdentity is |QPS − concurrency ÷ mean E2E| ÷ QPS.
	QPSIdentity check
	// TPSIdentity is |output TPS − QPS × mean N_out| ÷ output TPS.
	TPSIdentity check
}

func relErr(got, want float64) analysis.Float {
	if !finite(got) || !finite(want) || got == 0 {
		return analysis.NaN()
	}
	return analysis.Float(math.Abs(got-want) / math.Abs(got))
}
func errCheck(e analysis.Float, limit float64) check {
	if !e.OK() {
		return check{}
	}
	return check{Value: fpct(e), OK: float64(e) <= limit, Known: true}
}
func checksOf(l *analysis.Level) levelChecks {
	var c levelChecks
	if l.AchievedConcurrency.OK() && l.Concurrency > 0 {
		r := float64(l.AchievedConcurrency) / float64(l.Concurrency)
		c.Achieved = check{Value: fmt.Sprintf("%s (%s)", fnum(l.AchievedConcurrency), fpct(analysis.Float(r))), OK: r >= analysis.MinAchievedRatio, Known: true}
	}
	c.Little = errCheck(l.LittlesLawError, analysis.MaxLittlesLawError)
	c.Steady = check{Value: fbool(l.Steady), OK: l.Steady || l.Imprecise, Known: true}
	if l.Imprecise {
		c.Steady.Value = fmt.Sprintf("no: imprecise, kept (TPS ±%s)", fnum(l.OutputTPSCI95))
	}
	c.ClientBound = check{Value: fbool(l.ClientBound) + clientEvidence(l), OK: !l.ClientBound, Known: true}
	ttft, tpot, e2e, nout := float64(l.TTFT.Mean), float64(l.TPOT.Mean), float64(l.E2E.Mean), float64(l.MeanOutputTokens)
	c.E2EIdentity = errCheck(relErr(e2e, ttft+tpot*(nout-1)), maxIdentityErr)
	conc := float64(l.AchievedConcurrency)
	if !finite(conc) {
		conc = float64(l.Concurrency)
	}
	c.QPSIdentity = errCheck(relErr(float64(l.QPS), conc/(e2e/1000)), maxIdentityErr)
	c.TPSIdentity = errCheck(relErr(float64(l.OutputTPS), float64(l.QPS)*nout), maxIdentityErr)
	return c
}
func validCell(l *analysis.Level) string {
	switch {
	case l.Superseded:
		return "rerun" // its retry, another row, stands for it
	case l.Valid && l.Imprecise:
		return "yes ±" // kept with the CI it reached (DESIGN §4.1)
	case l.Valid:
		return "yes"
	}
	return "no ✗"
}

// validityTable holds the checks of DESIGN §1 per level; a failed check is marked ✗.
func validityTable(res *analysis.Result) table {
	if res.Mode.IsRate() {
		return rateValidityTable(res)
	}
	t := table{Header: []string{"concurrency", "achieved concurrency (÷ target, ≥ 95%)", "Little's-law error (≤ 10%)",
		"steady", "client-bound", "E2E ≈ TTFT + TPOT × (N_out − 1)", "QPS ≈ concurrency ÷ mean E2E",
		"output TPS ≈ QPS × mean N_out", "errors by class", "notes"}, Class: "text"}
	for _, l := range sortedLevels(res) {
		c := checksOf(&l)
		t.Rows = append(t.Rows, []string{strconv.Itoa(l.Concurrency), c.Achieved.String(), c.Little.String(),
			c.Steady.String(), c.ClientBound.String(), c.E2EIdentity.String(), c.QPSIdentity.String(),
			c.TPSIdentity.String(), errorClasses(l.ErrorClasses), strings.Join(levelNotes(&l), "; ")})
	}
	return t
}

// rateValidityTable holds the checks of every rate level: its achieved rate against the
// offered, its backlog, the schedule lag, Little's law (sustainable levels only), steadiness
// and the client; a failed check is marked ✗.
func rateValidityTable(res *analysis.Result) table {
	t := table{Header: []string{"offered (req/s)", "realised (÷ offered, within 5% or one arrival)", "achieved (÷ offered)", "sustainable (backlog growth, req/s)",
		"lag p99 (≤ max(1 ms, 1% TTFT p50))", "Little's-law error (≤ 10%, sustainable)", "steady", "client-bound",
		"output TPS ≈ QPS × mean N_out", "errors by class", "notes"}, Class: "text"}
	for _, l := range sortedLevels(res) {
		if !l.IsRate() {
			continue
		}
		c := checksOf(&l)
		little := c.Little
		if !l.Sustainable {
			little = check{Value: "— (unsustainable)", OK: true, Known: true}
		}
		t.Rows = append(t.Rows, []string{rateKey(&l), realizedCheck(&l).String(), achievedCheck(&l).String(), sustainableCell(&l), lagCheck(&l).String(),
			little.String(), c.Steady.String(), c.ClientBound.String(), c.TPSIdentity.String(), errorClasses(l.ErrorClasses),
			strings.Join(levelNotes(&l), "; ")})
	}
	return t
}

// achievedCheck is the achieved rate against the offered (analysis.MaxRateOff, or the noise of
// a Poisson count of the window's arrivals).
func achievedCheck(l *analysis.Level) check {
	x, got := float64(l.OfferedRPS), float64(l.AchievedRPS)
	if !finite(got) || !(x > 0) {
		return check{}
	}
	tol := analysis.MaxRateOff
	if w := float64(l.WindowS); finite(w) && w > 0 {
		tol = math.Max(tol, 3/math.Sqrt(x*w))
	}
	r := got / x
	return check{Value: fmt.Sprintf("%s (%s)", frate(l.AchievedRPS), fpct(analysis.Float(r))), OK: math.Abs(r-1) <= tol, Known: true}
}

// realizedCheck is the realised rate against the offered (record.RealizedWithin).
func realizedCheck(l *analysis.Level) check {
	x, got, w := float64(l.OfferedRPS), float64(l.RealizedRPS), float64(l.WindowS)
	if !finite(got) || !(x > 0) {
		return check{}
	}
	if !finite(w) || !(w > 0) {
		w = math.Inf(1)
	}
	return check{Value: fmt.Sprintf("%s (%s)", frate(l.RealizedRPS), fpct(analysis.Float(got/x))), OK: record.RealizedWithin(got, x, w), Known: true}
}

// lagCheck is the schedule lag p99 against max(1 ms, 1% of TTFT p50), checked at a
// sustainable level only (an unsustainable one's lag is its backlog's wait).
func lagCheck(l *analysis.Level) check {
	p99 := l.ScheduleLag.P99
	if !p99.OK() {
		return check{}
	}
	limit := analysis.MaxScheduleLagMS
	if t := float64(l.TTFT.P50); finite(t) {
		limit = math.Max(limit, analysis.MaxScheduleLagShare*t)
	}
	return check{Value: fnum(p99) + " ms", OK: !l.Sustainable || float64(p99) <= limit, Known: true}
}
