package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"
)

// Model-selection and detection thresholds (DESIGN §4).
const (
	// minFitLevels is the least number of valid levels the fits need.
	minFitLevels = 3
	// minIntervalLevels is the least number of valid levels for a bootstrap interval: two
	// residual degrees of freedom after a fitParams-parameter fit.
	minIntervalLevels = fitParams + 2
	// fitParams is the number of parameters of each throughput model (USL, batch, hinge).
	fitParams = 3
	// uslMinR2 is the R² from which the USL curve is trusted for the headline knee; below it
	// the hinge is used.
	uslMinR2 = 0.9
	// sharpMinR2 is the R² from which a sharp-knee fit (batch, hinge) that fits best gives the
	// headline knee its breakpoint (RulePlateauOnset): below it the levels scatter by more
	// than a fifth of their spread around the fit (√0.05 ≈ 0.22), too much to place a corner.
	sharpMinR2 = 0.95
	// minRiseLevels and minPlateauLevels are the least numbers of valid levels below and above
	// a sharp fit's breakpoint (by more than RefineTolerance) for it to be the headline knee:
	// as many as each side has parameters, the rise two (α and β, or the hinge's intercept and
	// slope) and the plateau one (its height). That the plateau stays flat is measured too
	// (plateauRule): a three-parameter fit bends between the last two levels of any curve.
	minRiseLevels    = 2
	minPlateauLevels = 1
	// hingeMargin is the share of the batch model's unexplained variance (1 − R²) below which
	// the hinge's must be for the hinge to be the curve instead of the batch model: a
	// residual RMS under half the batch model's.
	hingeMargin = 0.25
	// overloadDrop is the fall of throughput past its peak that counts as overload.
	overloadDrop = 0.10
	// blowupFactor is the TTFT p50 multiple of the first level's that the fallback blow-up
	// detector looks for.
	blowupFactor = 3.0
	// disagreement is the factor beyond which knee methods are said to disagree.
	disagreement = 2.0
)

// point is one level on the load axis: its x (the concurrency of a closed-loop level; the
// arrival rate of an open-loop one, Level.ArrivalRate), its output TPS and, on an open loop,
// its completion rate y (Level.CompletionRate; NaN when unknown).
type point struct {
	x, y, tps float64
	lv        *Level
}

// Analyze fits the throughput models to the valid levels and derives the headline knee, the
// TTFT blow-up, overload, the operating point, the SLO point and the capacity plan
// (DESIGN §4). Zero fields of opts take their defaults (KneeGain 10%, MaxErrorRate 5%);
// Bootstrap resamples seeded by Seed give the intervals. A level marked valid that fails a
// threshold its own fields show (error rate, steadiness, achieved concurrency, Little's law)
// is marked invalid in the result with a note, so imported levels are held to the same rules.
// Everything that cannot be computed is NaN or nil with a warning; Analyze never panics and
// does not modify levels. The result's levels are sorted along the load axis (SortLevels).
//
// Levels of an arrival-rate run (ModeOf: some level carries RateLevel) are analyzed on the
// rate axis (DESIGN §4.15): the capacity (maximum sustainable rate) with its interval, the
// TTFT blow-up rate, the SLO point on the rate axis, a trace replay's answer and the capacity
// plan; the result's Mode is record.ModeRate and its answer is Rate.
func Analyze(levels []Level, meta Meta, opts Options) Result {
	opts = opts.withDefaults()
	if !opts.API.Streams() && meta.API == "" {
		meta.API = opts.API // the reports read the run's yardstick from its meta
	}
	mode := ModeOf(levels)
	res := Result{
		Schema:     Schema,
		Mode:       mode,
		Meta:       meta,
		Levels:     slices.Clone(levels),
		Throughput: Throughput{MaxTPS: NaN()},
		Overload:   Overload{FromConcurrency: NaN(), DropPct: NaN()},
		SLO:        SLOResult{TTFTP95MS: NaN(), TPOTP95MS: NaN(), E2EP95MS: NaN(), MaxConcurrency: NaN(), TPS: NaN(), GoodputQPS: NaN()},
	}
	if res.Levels == nil {
		res.Levels = []Level{}
	}
	for i := range res.Levels {
		if rl := res.Levels[i].RateLevel; rl != nil {
			c := *rl // the result's own: the rechecks may change it
			res.Levels[i].RateLevel = &c
		}
	}
	// Along the axis, whatever order the levels ran in (levels added by sweep.refine run
	// after the planned ones): analysis.json, summary.csv and the warnings read in order.
	SortLevels(res.Levels)
	a := &analyzer{opts: opts, res: &res, ys: yardstickOf(opts.API)}
	if mode.IsRate() {
		res.Rate = NewRateResult()
	}
	a.analyze()
	res.Warnings = a.warnings.texts()
	res.NextSteps = a.nextSteps()
	return res
}

// analyze is Analyze's steps, one list on either axis (the steps read the run's axis). What
// belongs to one loop only: its saturation answer (saturation), a closed loop's overload and
// operating point, an open loop's trace answer. Energy per token (energy) reads the knee, the
// SLO point and max TPS and goes before the plan, which sizes its power.
// An interrupt (Options.Stop) ends it before its next step.
func (a *analyzer) analyze() {
	steps := []func(){a.collect, a.lengths, a.models, a.saturation, a.blowup}
	if a.res.Rate == nil {
		steps = append(steps, a.overload, a.operatingPoint)
	}
	steps = append(steps, a.slo)
	if a.res.Rate != nil {
		steps = append(steps, func() { a.rater().trace() })
	}
	steps = append(steps, a.energy, a.plan, a.cancels)
	for _, step := range steps {
		if a.stopped() {
			return
		}
		step()
	}
}

// saturation reads where the replica saturates: on a closed loop the throughput fits, the
// knee and what bounds it (DESIGN §4.2, §4.3); on an open loop the capacity, the largest
// sustainable rate (§4.15).
func (a *analyzer) saturation() {
	if a.res.Rate != nil {
		a.rater().capacity()
		return
	}
	for _, step := range []func(){a.throughput, a.knee, a.kneeOverload, a.checkServerLimit} {
		if a.stopped() {
			return
		}
		step()
	}
}

type analyzer struct {
	opts Options
	res  *Result
	// ys is what the run's levels are measured by (its API's throughput and latency).
	ys yardstick
	// pts are the usable valid levels sorted along the axis; fit are those of them with a
	// positive TPS, the points of a closed loop's throughput fits; all are every placed level
	// (placed) that is not client-bound, sorted along the axis.
	pts, fit, all []point
	usl           *USL
	hinge         *Hinge
	batch         *Batch
	// curve is the model the headline knee is read from, curveMethod its method.
	curve       func(float64) float64
	curveMethod Method
	// breachAt is the smallest x that measured an SLO breach, valid level or an excluded
	// closed-loop one that caps the SLO point (sloCapped); 0 when none did. The plan warns of
	// a closed loop's replicas run past it (pastBreach).
	breachAt float64
	// passing is the number of leading levels the SLO point was read from that meet every
	// SLO (slo sets it).
	passing int
	// warnings become the result's, in order.
	warnings warnings
}

// warn adds w, in the words of the run's yardstick.
func (a *analyzer) warn(w warning) { a.warnings.add(a.ys.say(w)) }

// warnOnce adds w unless a warning of its kind and subject is already there.
func (a *analyzer) warnOnce(w warning) { a.warnings.addOnce(a.ys.say(w)) }

// collect gathers the levels the answers read, on either axis: it rechecks every level (on an
// open loop its sustainability first, recheckSustainable), warns of those dropped or excluded,
// sorts the valid ones along the axis into a.pts (a level is placed at the rate its window
// realised: two close offered rates may realise in the other order), every level that was not
// client-bound into a.all, and sets the maximum TPS. On a closed loop the levels of positive
// TPS are the points of the throughput fits (a.fit); on an open loop it flags the levels that
// did not keep their schedule (offSchedule) and says which latencies the answers read
// (RateResult.LatencyFrom).
func (a *analyzer) collect() {
	ax := a.res.Axis()
	var disbelieved []*Level
	var off offSchedule
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		if lv.Superseded {
			continue // its retry stands for it
		}
		if ax.IsRate() && !lv.IsRate() {
			a.warn(rateClosedLevel(lv.Concurrency))
			continue
		}
		x, tps := ax.X(lv), float64(a.ys.tps(lv))
		if !placed(ax, tps, lv) {
			a.warn(levelDropped(ax, lv))
			continue
		}
		if lv.UsageDisbelieved > 0 {
			disbelieved = append(disbelieved, lv)
		}
		p := point{x: x, y: completionRate(lv), tps: tps, lv: lv}
		if !lv.ClientBound {
			a.all = append(a.all, p)
		}
		recheckSustainable(lv)
		if lv.Valid {
			a.recheck(lv)
		}
		if !lv.Valid {
			a.warn(levelExcluded(ax, lv))
			continue
		}
		if lv.Imprecise && !ax.IsRate() { // kept as imprecise: a closed loop's rule (§4.1)
			a.warn(levelImprecise(lv))
		}
		off.add(lv)
		a.pts = append(a.pts, p)
	}
	byX := func(p, q point) int { return cmp.Compare(p.x, q.x) }
	slices.SortStableFunc(a.pts, byX)
	slices.SortStableFunc(a.all, byX)
	off.warn(a)
	a.maxTPS()
	if ax.IsRate() {
		a.res.Rate.LatencyFrom = latencyFrom(a.pts)
	}
	if len(a.pts) == 0 {
		a.warn(noValidLevels(nextAfterExclusions(a.res.Levels)))
	} else if !ax.IsRate() {
		a.fitPoints()
	}
	if len(disbelieved) > 0 {
		a.warn(usageDisbelieved(disbelieved))
	}
}

// placed reports whether lv has a place on the axis (a concurrency, an offered rate above
// 0) and a throughput tps (the run's yardstick's) that is not negative or infinite; a closed
// loop, whose knee is read from it, needs it measured (an open loop's capacity is read from
// its completion rate).
func placed(ax Axis, tps float64, lv *Level) bool {
	if tps < 0 || math.IsInf(tps, 0) {
		return false
	}
	if ax.IsRate() {
		x := float64(lv.OfferedRPS)
		return x > 0 && finite(x)
	}
	return lv.Concurrency > 0 && finite(tps)
}

// maxTPS sets the maximum output TPS over the valid levels and where on the axis it was
// measured.
func (a *analyzer) maxTPS() {
	for _, p := range a.pts {
		if !finite(p.tps) || a.res.Throughput.MaxTPS.OK() && p.tps <= float64(a.res.Throughput.MaxTPS) {
			continue
		}
		a.res.Throughput.MaxTPS = Float(p.tps)
		if a.res.Rate != nil {
			a.res.Rate.MaxTPSRPS = p.lv.OfferedRPS
		} else {
			a.res.Throughput.MaxTPSConcurrency = p.lv.Concurrency
		}
	}
}

// fitPoints sets a.fit, the valid levels of positive TPS, and warns when there are too few
// for the fits or when some were left out for their zero TPS.
func (a *analyzer) fitPoints() {
	var zero []string
	for _, p := range a.pts {
		if p.tps > 0 {
			a.fit = append(a.fit, p)
		} else {
			zero = append(zero, fmt.Sprint(p.lv.Concurrency))
		}
	}
	if len(a.pts) < minFitLevels {
		a.warn(tooFewLevels(len(a.pts), nextAfterExclusions(a.res.Levels)))
	} else if len(zero) > 0 {
		// A collapsed level (no output at all) is data for overload, but the usl and batch
		// models have no zero; one such level must not cost the whole curve its fits.
		a.warn(zeroThroughput(zero, len(a.fit)))
	}
}

// xy returns the points of the throughput fits.
func (a *analyzer) xy() (x, y []float64) {
	for _, p := range a.fit {
		x = append(x, p.x)
		y = append(y, p.tps)
	}
	return x, y
}

// rater reads the answers only an arrival-rate run has (DESIGN §4.15): the capacity and a
// trace replay's answer.
type rater struct {
	*analyzer
	rr *RateResult
}

// rater returns the analyzer of an open loop's own answers (a.res.Rate set).
func (a *analyzer) rater() *rater { return &rater{analyzer: a, rr: a.res.Rate} }

// latencyFrom says which latencies the answers of an open loop read
// (RateResult.LatencyFrom): "scheduled" when every valid level has them from the scheduled
// arrival, "sent" when none has, else "mixed".
func latencyFrom(pts []point) string {
	sched, sent := 0, 0
	for _, p := range pts {
		if hasLatency(p.lv.TTFTScheduled) || hasLatency(p.lv.E2EScheduled) {
			sched++
		} else {
			sent++
		}
	}
	switch {
	case sent == 0:
		return "scheduled"
	case sched == 0:
		return "sent"
	}
	return "mixed"
}
