package analysis

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// Model-selection and detection thresholds (DESIGN §4).
const (
	// MinFitLevels is the least number of valid levels the fits need.
	MinFitLevels = 3
	// MinIntervalLevels is the least number of valid levels for a bootstrap interval: two
	// residual degrees of freedom after a fitParams-parameter fit.
	MinIntervalLevels = fitParams + 2
	// fitParams is the number of parameters of each throughput model (USL, batch, hinge).
	fitParams = 3
	// USLMinR2 is the R² from which the USL curve is trusted for the headline knee; below it
	// the hinge is used.
	USLMinR2 = 0.9
	// OverloadDrop is the fall of throughput past its peak that counts as overload.
	OverloadDrop = 0.10
	// BlowupFactor is the TTFT p50 multiple of the first level's that the fallback blow-up
	// detector looks for.
	BlowupFactor = 3.0
	// disagreement is the factor beyond which knee methods are said to disagree.
	disagreement = 2.0
)

// point is one usable valid level for the fits.
type point struct {
	c, tps float64
	lv     *Level
}

// Analyze fits the throughput models to the valid levels and derives the headline knee, the
// TTFT blow-up, overload, the operating point, the SLO point and the capacity plan
// (DESIGN §4). Zero fields of opts take their defaults (KneeGain 10%, MaxErrorRate 5%);
// Bootstrap resamples seeded by Seed give the intervals. A level marked valid that fails a
// threshold its own fields show (error rate, steadiness, achieved concurrency, Little's law)
// is marked invalid in the result with a note, so imported levels are held to the same rules. Everything that cannot be computed
// is NaN or nil with a warning; Analyze never panics and does not modify levels. The result's
// levels are sorted by concurrency.
func Analyze(levels []Level, meta Meta, opts Options) Result {
	opts = opts.withDefaults()
	a := &analyzer{opts: opts}
	res := Result{
		Schema:     Schema,
		Meta:       meta,
		Levels:     slices.Clone(levels),
		Throughput: Throughput{MaxTPS: NaN()},
		Overload:   Overload{FromConcurrency: NaN(), DropPct: NaN()},
		SLO:        SLOResult{TTFTP95MS: NaN(), TPOTP95MS: NaN(), E2EP95MS: NaN(), MaxConcurrency: NaN(), TPS: NaN(), GoodputQPS: NaN()},
	}
	if res.Levels == nil {
		res.Levels = []Level{}
	}
	// By concurrency, whatever order the levels ran in (levels added by sweep.refine run
	// after the planned ones): analysis.json, summary.csv and the warnings read in order.
	slices.SortStableFunc(res.Levels, func(p, q Level) int { return cmp.Compare(p.Concurrency, q.Concurrency) })
	a.res = &res
	a.collect()
	a.throughput()
	a.knee()
	a.blowup()
	a.overload()
	a.operatingPoint()
	a.slo()
	a.capacity()
	if res.Warnings == nil {
		res.Warnings = []string{}
	}
	return res
}

type analyzer struct {
	opts Options
	res  *Result
	// pts are the usable valid levels sorted by concurrency; fit are those of them with a
	// positive TPS, the points of the throughput fits; all are every level with a finite TPS
	// that is not client-bound, sorted by concurrency.
	pts, fit, all []point
	usl           *USL
	hinge         *Hinge
	batch         *Batch
	// curve is the model the headline knee is read from, curveName its name.
	curve     func(float64) float64
	curveName string
}

// warnOnce adds a warning unless the same text is already there.
func (a *analyzer) warnOnce(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	if !slices.Contains(a.res.Warnings, w) {
		a.res.Warnings = append(a.res.Warnings, w)
	}
}

func (a *analyzer) warn(format string, args ...any) {
	a.res.Warnings = append(a.res.Warnings, fmt.Sprintf(format, args...))
}

func (a *analyzer) collect() {
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		c, tps := float64(lv.Concurrency), float64(lv.OutputTPS)
		if lv.Concurrency <= 0 || !finite(tps) || tps < 0 {
			// A null TPS is "not measured": the warning says so rather than print NaN.
			got := fmt.Sprintf("%g", tps)
			switch {
			case math.IsNaN(tps):
				got = "null"
			case math.IsInf(tps, 0):
				got = "infinite"
			}
			a.warn("level concurrency %d: dropped: concurrency must be > 0 and output TPS finite and ≥ 0 (output TPS %s)", lv.Concurrency, got)
			continue
		}
		if !lv.ClientBound {
			a.all = append(a.all, point{c, tps, lv})
		}
		if lv.Valid {
			a.recheck(lv)
		}
		if !lv.Valid {
			why := "invalid"
			if len(lv.Notes) > 0 {
				why = strings.Join(lv.Notes, "; ")
			}
			a.warn("level concurrency %d excluded from fits: %s", lv.Concurrency, why)
			continue
		}
		a.pts = append(a.pts, point{c, tps, lv})
	}
	byC := func(p, q point) int { return cmp.Compare(p.c, q.c) }
	slices.SortStableFunc(a.pts, byC)
	slices.SortStableFunc(a.all, byC)
	for _, p := range a.pts {
		if !a.res.Throughput.MaxTPS.OK() || p.tps > float64(a.res.Throughput.MaxTPS) {
			a.res.Throughput.MaxTPS = Float(p.tps)
			a.res.Throughput.MaxTPSConcurrency = p.lv.Concurrency
		}
	}
	var zero []string
	for _, p := range a.pts {
		if p.tps > 0 {
			a.fit = append(a.fit, p)
		} else {
			zero = append(zero, fmt.Sprint(p.lv.Concurrency))
		}
	}
	if len(a.pts) == 0 {
		a.warn("no valid levels: nothing to analyze")
	} else if len(a.pts) < MinFitLevels {
		a.warn("too few valid levels (%d < %d): no throughput fits, no knee and no TTFT hinge fit", len(a.pts), MinFitLevels)
	} else if len(zero) > 0 {
		// A collapsed level (no output at all) is data for overload, but the usl and batch
		// models have no zero; one such level must not cost the whole curve its fits.
		t := fmt.Sprintf("throughput fits: the valid level(s) at concurrency %s with 0 output tokens/s are left out of the usl, batch and hinge fits and the knee (the models need positive throughput)",
			strings.Join(zero, ", "))
		if len(a.fit) < MinFitLevels {
			t += fmt.Sprintf("; %d level(s) remain, too few (< %d): no throughput fits and no knee", len(a.fit), MinFitLevels)
		}
		a.warn("%s", t)
	}
}

// recheck applies the validity thresholds that a level carries in its own fields (error rate
// above MaxErrorRate, not steady, achieved concurrency below MinAchievedRatio × target,
// Little's-law error above MaxLittlesLawError) to a level marked valid. Levels from Summarize
// already passed them; imported ones (level-summary CSV, vLLM bench JSON) had no one check.
// A failing level is marked invalid in the result (its notes are copied, never appended to
// the caller's slice).
func (a *analyzer) recheck(lv *Level) {
	var why []string
	if e := lv.ErrorRate; e.OK() && float64(e) > a.opts.MaxErrorRate {
		why = append(why, fmt.Sprintf("error rate %.1f%% > %.1f%%", float64(e)*100, a.opts.MaxErrorRate*100))
	}
	if !lv.Steady {
		why = append(why, "not steady")
	}
	// 0 is "not reported" here (a zero-value field); Summarize flags a real empty window itself.
	if ac := lv.AchievedConcurrency; ac.OK() && ac > 0 && float64(ac) < MinAchievedRatio*float64(lv.Concurrency) {
		why = append(why, fmt.Sprintf("achieved concurrency %.2f < %.0f%% of target %d", float64(ac), MinAchievedRatio*100, lv.Concurrency))
	}
	if l := lv.LittlesLawError; l.OK() && float64(l) > MaxLittlesLawError {
		why = append(why, fmt.Sprintf("Little's-law error %.1f%% > %.0f%%", float64(l)*100, MaxLittlesLawError*100))
	}
	if len(why) == 0 {
		return
	}
	lv.Valid = false
	notes := slices.Clip(lv.Notes)
	for _, w := range why {
		notes = append(notes, "invalid: "+w)
	}
	lv.Notes = notes
}

// xy returns the points of the throughput fits.
func (a *analyzer) xy() (x, y []float64) {
	for _, p := range a.fit {
		x = append(x, p.c)
		y = append(y, p.tps)
	}
	return x, y
}

// geometric reports whether the levels grow by a roughly constant factor ≥ 1.5. Called with the
// planned levels; when it holds, Kneedle runs on log2(concurrency) of every level, added ones
// included.
func geometric(x []float64) bool {
	var ratios []float64
	for i := 1; i < len(x); i++ {
		if x[i] > x[i-1] {
			ratios = append(ratios, x[i]/x[i-1])
		}
	}
	if len(ratios) < 2 {
		return false
	}
	lo, hi := slices.Min(ratios), slices.Max(ratios)
	return lo >= 1.5 && hi/lo <= 1.5
}

func (a *analyzer) throughput() {
	if len(a.fit) < MinFitLevels {
		return
	}
	x, y := a.xy()
	if u, err := FitUSL(x, y); err != nil {
		a.warn("usl: %v", err)
	} else {
		a.usl = &u
		if !u.PeakConcurrency.OK() {
			a.warn("usl: κ = %.3g: the fitted curve has no peak (no coherency delay)", float64(u.Kappa))
		}
	}
	if b, err := FitBatch(x, y); err != nil {
		a.warn("batch: %v", err)
	} else {
		a.batch = &b
	}
	if h, err := FitHinge(x, y); err != nil {
		a.warn("hinge: %v", err)
	} else {
		a.hinge = &h
	}
	kx := x
	// The plan's spacing decides the axis: levels added between doublings (sweep.refine)
	// break the constant factor but not the doubling plan's log-scale reading.
	var planned []float64
	for _, p := range a.fit {
		if p.lv == nil || p.lv.Refine == "" {
			planned = append(planned, p.c)
		}
	}
	geo := geometric(planned)
	shape := "concave increasing on concurrency"
	if geo {
		kx = make([]float64, len(x))
		for i := range x {
			kx[i] = math.Log2(x[i])
		}
		shape = "concave increasing on log2(concurrency)"
	}
	k, ok, err := LocateKnee(kx, y, KneedleOptions{})
	if err == nil && ok && k.Knee == kx[0] {
		// The difference curve starts with its maximum at the left edge (the curve is convex
		// there, as throughput on a log axis is at first): the offline knee is that edge
		// artefact, so take the online (last) knee instead.
		k, ok, err = LocateKnee(kx, y, KneedleOptions{Online: true})
		shape += ", online"
	}
	switch {
	case err != nil || !ok:
		a.warn("kneedle: no knee found on the throughput curve")
	case k.Knee == kx[0]:
		// Still the left edge, online: no later maximum of the difference curve is followed by
		// a drop of S mean steps, as on a straight or convex curve (throughput growing as fast
		// or faster at every level) or one that bends only at its last levels. The first level
		// is an edge artefact, not a knee.
		a.warn("kneedle: no knee: the only knee Kneedle finds is the first level (concurrency %g), an edge artefact", x[0])
	default:
		knee := k.Knee
		if geo {
			knee = math.Exp2(knee)
		}
		a.res.Throughput.Kneedle = &Kneedle{Knee: Float(knee), KneeTPS: Float(k.KneeY), Shape: shape}
	}
	a.res.Throughput.USL = a.usl
	a.res.Throughput.Hinge = a.hinge
	a.res.Throughput.Batch = a.batch
}

// doublingKnee returns the smallest N in [lo, hi] with X(2N)/X(N) − 1 < gain, solved by a
// log-spaced scan and bisection. status is "found", "below" (already below gain at lo) or
// "none" (still ≥ gain at hi).
func doublingKnee(X func(float64) float64, lo, hi, gain float64) (float64, string) {
	g := func(n float64) float64 {
		xn := X(n)
		if !(xn > 0) {
			return math.NaN()
		}
		return X(2*n)/xn - 1 - gain
	}
	if !(hi >= lo) || !(lo > 0) {
		return math.NaN(), "none"
	}
	if v := g(lo); finite(v) && v < 0 {
		return lo, "below"
	}
	const steps = 256
	prev := lo
	for i := 1; i <= steps; i++ {
		n := lo * math.Pow(hi/lo, float64(i)/steps)
		if v := g(n); finite(v) && v < 0 {
			l, h := prev, n
			for range 60 {
				m := math.Sqrt(l * h)
				if v := g(m); finite(v) && v < 0 {
					h = m
				} else {
					l = m
				}
			}
			return h, "found"
		}
		prev = n
	}
	return math.NaN(), "none"
}

func (a *analyzer) knee() {
	if len(a.fit) < MinFitLevels {
		return
	}
	x, y := a.xy()
	// The headline curve is the best-fitting (highest R², all three have three parameters) of
	// the USL (when R² ≥ 0.9), the batch-limited Amdahl curve and the hinge; ties go in that
	// order.
	var method string
	bestR2 := math.Inf(-1)
	if a.usl != nil && float64(a.usl.R2) >= USLMinR2 {
		u := *a.usl
		a.curve, method, bestR2 = u.At, "usl", float64(u.R2)
	}
	// R² is NaN only for constant throughput, which every model fits: rank it as 0.
	r2 := func(v Float) float64 {
		if v.OK() {
			return float64(v)
		}
		return 0
	}
	if a.batch != nil && r2(a.batch.R2) > bestR2 {
		b := *a.batch
		a.curve, method, bestR2 = b.At, "batch", r2(b.R2)
	}
	if a.hinge != nil && r2(a.hinge.R2) > bestR2 {
		h := *a.hinge
		a.curve, method = h.At, "hinge"
	}
	if a.curve == nil {
		a.warn("no knee: none of the USL, batch and hinge models could be fitted")
		return
	}
	a.curveName = method
	lo, hi := x[0], x[len(x)-1]/2
	if hi < lo {
		a.warn("no knee: the valid levels span less than one doubling (%g to %g)", x[0], x[len(x)-1])
		return
	}
	gain := a.opts.KneeGain
	k, status := doublingKnee(a.curve, lo, hi, gain)
	if status == "none" {
		a.warn("no knee: throughput still grows %.0f%% per doubling at concurrency %g (the largest valid level, knee_gain %.0f%%); extend the sweep",
			(a.curve(x[len(x)-1])/a.curve(hi)-1)*100, x[len(x)-1], gain*100)
		a.bootstrapUSL(x, y, gain, lo, hi, false)
		return
	}
	if status == "below" {
		a.warn("knee at or below the smallest valid level (concurrency %g): one doubling already adds < %.0f%%; measure lower concurrencies", lo, gain*100)
	}
	knee := &Knee{Concurrency: Float(k), TPS: Float(a.curve(k)), Method: method, Interval: [2]Float{NaN(), NaN()},
		Others: map[string]Float{}}
	iv := a.bootstrapUSL(x, y, gain, lo, hi, method == "usl")
	switch method {
	case "hinge":
		iv = a.bootstrapCurve(x, y, gain, lo, hi, a.hinge.At, func(x, ys []float64) (func(float64) float64, error) {
			h, err := FitHinge(x, ys)
			return h.At, err
		})
	case "batch":
		iv = a.bootstrapCurve(x, y, gain, lo, hi, a.batch.At, func(x, ys []float64) (func(float64) float64, error) {
			b, err := FitBatch(x, ys)
			return b.At, err
		})
	}
	knee.Interval = iv
	if a.usl != nil && a.usl.PeakConcurrency.OK() {
		knee.Others["usl"] = a.usl.PeakConcurrency
	}
	if a.hinge != nil {
		knee.Others["hinge"] = a.hinge.Breakpoint
	}
	if a.batch != nil {
		knee.Others["batch"] = a.batch.Limit
	}
	if kn := a.res.Throughput.Kneedle; kn != nil {
		knee.Others["kneedle"] = kn.Knee
	}
	for _, name := range []string{"usl", "batch", "hinge", "kneedle"} {
		v, ok := knee.Others[name]
		if !ok || !v.OK() || !(v > 0) {
			continue
		}
		// The USL peak is where a retrograde curve turns down, not a knee; past a hard
		// plateau it is an extrapolation of a worse model, so it is compared only when USL
		// is the curve the headline knee was read from.
		if name == "usl" && method != "usl" {
			continue
		}
		if r := float64(v) / k; r > disagreement || r < 1/disagreement {
			label := map[string]string{"usl": "USL peak", "batch": "batch limit", "hinge": "hinge breakpoint", "kneedle": "Kneedle knee"}[name]
			a.warn("knee methods disagree: %s at concurrency %.3g vs the headline knee at %.3g (%s, %.0f%% per doubling), more than a factor %g apart",
				label, float64(v), k, method, gain*100, disagreement)
		}
	}
	if lo, hi, ok := bracket(x, k); ok && hi > maxLevelGap*lo {
		a.warn("knee: the headline knee (%.3g) lies between the measured levels %g and %g, %.3g× apart: it is read from the fitted curve between them; measure levels in between to pin it down",
			k, lo, hi, hi/lo)
	}
	knee.Evidence = a.evidence(k)
	a.res.Knee = knee
}

// maxLevelGap is the widest ratio between neighbouring measured levels that a knee or a TTFT
// blow-up may fall between without a warning: one doubling (with room for rounding).
const maxLevelGap = 2 * (1 + 1e-9)

// bracket returns the measured levels around v: lo, the largest of xs (ascending) < v, and
// hi, the smallest > v; ok is false when v is a measured level itself or outside
// (xs[0], xs[len−1]).
func bracket(xs []float64, v float64) (lo, hi float64, ok bool) {
	i := sort.SearchFloat64s(xs, v) // first index with xs[i] ≥ v
	if i == 0 || i >= len(xs) || xs[i] == v {
		return 0, 0, false
	}
	return xs[i-1], xs[i], true
}

// blowupGap warns when the measured TTFT only brackets the blow-up r found: the last level
// within 2× the fitted baseline and the first above it are more than a doubling apart, so
// the breakpoint between them is the fit's, not a measurement's.
func (a *analyzer) blowupGap(x, y []float64, r Ramp) {
	lastFlat, firstHigh := math.NaN(), math.NaN()
	for i := range x {
		if y[i] > 2*r.Base {
			firstHigh = x[i]
			break
		}
		lastFlat = x[i]
	}
	if finite(lastFlat) && finite(firstHigh) && firstHigh > maxLevelGap*lastFlat {
		a.warn("TTFT blow-up: TTFT p50 stays within 2× its baseline (%.3g ms) up to concurrency %g and exceeds it at %g: the blow-up lies between them, where no level was measured (the fit puts it at %.3g); measure levels in between to pin it down",
			r.Base, lastFlat, firstHigh, r.Breakpoint)
	}
}

// residualBootstrap resamples the residuals of fit at x, refits with refit and collects
// stat of each refit; it returns the 2.5th and 97.5th percentiles, or NaN when fewer than half
// of the resamples gave a value. Every model here has fitParams parameters, so the residuals
// are rescaled by √(n ÷ (n − fitParams)) first (Davison and Hinkley 1997, §6.2.3: raw
// residuals are smaller than the errors they stand for), and with fewer than
// MinIntervalLevels points there is no interval (a warning says so): a three-parameter curve
// through four points leaves one residual and a bootstrap of it claims a precision the
// levels do not have.
func (a *analyzer) residualBootstrap(x, y []float64, fitted func(float64) float64, refit func(ys []float64) (float64, bool)) [2]Float {
	B := a.opts.Bootstrap
	if B <= 0 {
		return [2]Float{NaN(), NaN()}
	}
	n := len(x)
	if n < MinIntervalLevels {
		a.warnOnce("bootstrap: %d valid levels leave %d residual degree(s) of freedom after a %d-parameter fit: no 95%% interval; measure at least %d levels",
			n, n-fitParams, fitParams, MinIntervalLevels)
		return [2]Float{NaN(), NaN()}
	}
	scale := math.Sqrt(float64(n) / float64(n-fitParams))
	rng := rand.New(rand.NewPCG(a.opts.Seed, 0x6b6e656563617021))
	fit := make([]float64, len(x))
	res := make([]float64, len(x))
	for i := range x {
		fit[i] = fitted(x[i])
		res[i] = (y[i] - fit[i]) * scale
	}
	ys := make([]float64, len(x))
	var vals []float64
	for range B {
		for i := range ys {
			ys[i] = math.Max(fit[i]+res[rng.IntN(len(res))], 1e-9)
		}
		if v, ok := refit(ys); ok && finite(v) {
			vals = append(vals, v)
		}
	}
	if len(vals)*2 < B {
		a.warn("bootstrap: only %d of %d resamples gave a value: no interval", len(vals), B)
		return [2]Float{NaN(), NaN()}
	}
	slices.Sort(vals)
	return [2]Float{Float(Percentile(vals, 2.5)), Float(Percentile(vals, 97.5))}
}

// bootstrapUSL sets the USL peak interval and returns the interval of the doubling knee on the
// USL curve when forKnee.
func (a *analyzer) bootstrapUSL(x, y []float64, gain, lo, hi float64, forKnee bool) [2]Float {
	if a.usl == nil || a.opts.Bootstrap <= 0 {
		return [2]Float{NaN(), NaN()}
	}
	var peaks []float64
	iv := a.residualBootstrap(x, y, a.usl.At, func(ys []float64) (float64, bool) {
		u, err := fitUSL(x, ys, [][2]float64{{float64(a.usl.Sigma), float64(a.usl.Kappa)}})
		if err != nil {
			return 0, false
		}
		if u.PeakConcurrency.OK() {
			peaks = append(peaks, float64(u.PeakConcurrency))
		}
		if !forKnee {
			return 0, true
		}
		k, status := doublingKnee(u.At, lo, hi, gain)
		return k, status != "none"
	})
	if a.usl.PeakConcurrency.OK() && len(peaks)*2 >= a.opts.Bootstrap {
		slices.Sort(peaks)
		a.usl.PeakConcurrencyInterval = [2]Float{Float(Percentile(peaks, 2.5)), Float(Percentile(peaks, 97.5))}
	}
	if !forKnee {
		return [2]Float{NaN(), NaN()}
	}
	return iv
}

// bootstrapCurve returns the bootstrap interval of the doubling knee on the curve refit
// fits to resampled throughputs around fitted.
func (a *analyzer) bootstrapCurve(x, y []float64, gain, lo, hi float64, fitted func(float64) float64,
	refit func(x, y []float64) (func(float64) float64, error)) [2]Float {
	return a.residualBootstrap(x, y, fitted, func(ys []float64) (float64, bool) {
		curve, err := refit(x, ys)
		if err != nil {
			return 0, false
		}
		k, status := doublingKnee(curve, lo, hi, gain)
		return k, status != "none"
	})
}

// evidence quotes the server metrics of the measured level nearest to c (on log scale).
func (a *analyzer) evidence(c float64) string {
	var best *Level
	bd := math.Inf(1)
	for _, p := range a.pts {
		if p.lv.Server == nil {
			continue
		}
		if d := math.Abs(math.Log(p.c / c)); d < bd {
			best, bd = p.lv, d
		}
	}
	if best == nil {
		return ""
	}
	s := best.Server
	parts := []string{fmt.Sprintf("mean running %.1f", s.MeanRunning), fmt.Sprintf("mean waiting %.1f", s.MeanWaiting),
		fmt.Sprintf("max KV usage %.0f%%", s.MaxKVUsage*100)}
	if s.Preemptions > 0 {
		parts = append(parts, fmt.Sprintf("%.0f preemptions", s.Preemptions))
	}
	var signs []string
	if s.MeanWaiting > 0 {
		signs = append(signs, "requests queue")
	}
	if s.MaxKVUsage >= 0.95 {
		signs = append(signs, "KV cache full")
	}
	if s.Preemptions > 0 {
		signs = append(signs, "preemptions")
	}
	out := fmt.Sprintf("server at concurrency %d: %s", best.Concurrency, strings.Join(parts, ", "))
	if len(signs) > 0 {
		out += " (saturation: " + strings.Join(signs, ", ") + ")"
	}
	return out
}

func (a *analyzer) blowup() {
	var x, y []float64
	for _, p := range a.pts {
		if v := float64(p.lv.TTFT.P50); finite(v) && v > 0 {
			x = append(x, p.c)
			y = append(y, v)
		}
	}
	switch len(x) {
	case 0:
		a.warn("no TTFT blow-up: no valid level has a TTFT p50")
		return
	case 1:
		a.warn("no TTFT blow-up: only one valid level (concurrency %g) has a TTFT p50: nothing to compare it with", x[0])
		return
	}
	if len(x) >= MinFitLevels {
		// The ramp is fitted by least squares weighted by TTFT^−1.5 first (FitRampWeighted):
		// TTFT spans orders of magnitude over a sweep and its noise grows with it, so an
		// unweighted fit lets the largest levels place the breakpoint. The unweighted fit is
		// the fallback when the weighted one is no ramp.
		for _, fit := range []func(x, y []float64) (Ramp, error){FitRampWeighted, FitRamp} {
			if r, err := fit(x, y); err == nil && r.Slope > 0 && r.Base > 0 && r.Breakpoint < x[len(x)-1] &&
				r.R2 >= 0.8 && r.Slope*(x[len(x)-1]-r.Breakpoint) >= 0.5*r.Base {
				a.res.TTFTBlowup = &Blowup{Concurrency: Float(r.Breakpoint), Method: "hinge", BaselineMS: Float(r.Base), SlopeMSPerUser: Float(r.Slope)}
				a.blowupGap(x, y, r)
				return
			}
		}
	}
	base := y[0]
	for i := range x {
		if y[i] > BlowupFactor*base {
			a.res.TTFTBlowup = &Blowup{Concurrency: Float(x[i]), Method: "3x_baseline", BaselineMS: Float(base), SlopeMSPerUser: NaN()}
			return
		}
	}
	a.warn("no TTFT blow-up: TTFT p50 stays within %gx of the first level's %.0f ms up to concurrency %g", BlowupFactor, base, x[len(x)-1])
}

func (a *analyzer) overload() {
	if len(a.all) < 2 {
		return
	}
	peak := 0
	for i, p := range a.all {
		if p.tps > a.all[peak].tps {
			peak = i
		}
	}
	pk := a.all[peak].tps
	drop := 0.0
	low := a.all[peak]
	a.res.Overload.DropPct = 0
	for _, p := range a.all[peak+1:] {
		if pk > 0 && (pk-p.tps)/pk > drop {
			drop, low = (pk-p.tps)/pk, p
		}
		if !a.res.Overload.Detected && p.tps < (1-OverloadDrop)*pk {
			a.res.Overload.Detected = true
			a.res.Overload.FromConcurrency = Float(p.c)
		}
	}
	a.res.Overload.DropPct = Float(drop * 100)
	if a.res.Overload.Detected {
		a.warn("overload: throughput falls %.0f%% past its peak of %.0f tokens/s at concurrency %g (below %.0f%% of the peak from concurrency %g)",
			drop*100, pk, a.all[peak].c, (1-OverloadDrop)*100, float64(a.res.Overload.FromConcurrency))
		if why := a.dropWithinNoise(a.all[peak], low); why != "" {
			a.warn("overload: the %.0f%% drop from concurrency %g to %g may be noise: %s; repeat those levels before trusting it", drop*100, a.all[peak].c, low.c, why)
		}
	}
}

// dropWithinNoise says why the fall of throughput from the peak level pk to the level lo is
// within the measurements' noise, or returns "". With both levels' 95% CIs it is when the
// intervals overlap. Without them the noise is estimated from the levels up to the peak: s,
// the RMS residual of the headline curve over them (n − 3 degrees of freedom, every model
// has three parameters); the difference of two levels with independent noise of SD s has SD
// √2·s, so a drop within 2√2·s ≈ 2.8·s is inside the two-sided 95% range of noise alone.
// The peak is the highest of several noisy levels, so noise alone often puts it 10% above a
// later one: ±20% noise on a flat plateau "falls" 26% past its peak.
func (a *analyzer) dropWithinNoise(pk, lo point) string {
	d := pk.tps - lo.tps
	if cp, cl := pk.lv.OutputTPSCI95, lo.lv.OutputTPSCI95; cp.OK() && cl.OK() {
		if d <= float64(cp)+float64(cl) {
			return fmt.Sprintf("the 95%% confidence intervals of the two levels (±%.0f and ±%.0f tokens/s) overlap", float64(cp), float64(cl))
		}
		return ""
	}
	if a.curve == nil {
		return ""
	}
	var sse float64
	n := 0
	for _, p := range a.fit {
		if p.c > pk.c {
			break
		}
		r := p.tps - a.curve(p.c)
		sse += r * r
		n++
	}
	if n <= 3 {
		return ""
	}
	s := math.Sqrt(sse / float64(n-3))
	if d <= 2*math.Sqrt2*s {
		return fmt.Sprintf("the levels up to the peak scatter by %.0f tokens/s (RMS) around the %s fit, and a drop of %.0f tokens/s is within 2.8 times that for the difference of two levels", s, a.curveName, d)
	}
	return ""
}

func (a *analyzer) operatingPoint() {
	var best *OperatingPoint
	median := false
	// n counts the levels with a power, last is the largest of their concurrencies.
	n, last := 0, 0.0
	for _, p := range a.pts {
		e := float64(p.lv.E2E.Mean)
		if !finite(e) {
			// Imported tables may carry only the median.
			e, median = float64(p.lv.E2E.P50), true
		}
		if !finite(e) || e <= 0 {
			continue
		}
		power := p.tps / (e / 1e3)
		n, last = n+1, p.c
		if best == nil || power > float64(best.Power) {
			best = &OperatingPoint{Concurrency: Float(p.c), TPS: Float(p.tps), Power: Float(power)}
		}
	}
	if best == nil && len(a.pts) > 0 {
		a.warn("no operating point: no valid level has a mean or median E2E")
	} else if best != nil && median {
		a.warn("operating point: mean E2E missing for some levels; E2E p50 used in its place")
	}
	if best != nil && n > 1 && float64(best.Concurrency) == last {
		a.warn("operating point: power (output TPS ÷ mean E2E) still rises at the largest valid level (concurrency %g): the maximum lies beyond the measured range; extend the sweep", last)
	}
	a.res.OperatingPoint = best
}

// sloMetric is one SLO: its name, threshold in ms and the level's p95 in ms.
type sloMetric struct {
	name string
	thr  float64
	get  func(*Level) float64
}

func (a *analyzer) slo() {
	s := a.opts.SLO
	ms := func(d float64) Float {
		if d > 0 {
			return Float(d / 1e6)
		}
		return NaN()
	}
	a.res.SLO.TTFTP95MS, a.res.SLO.TPOTP95MS, a.res.SLO.E2EP95MS = ms(float64(s.TTFTP95)), ms(float64(s.TPOTP95)), ms(float64(s.E2EP95))
	var metrics []sloMetric
	add := func(name string, thr Float, get func(*Level) float64) {
		if !thr.OK() {
			return
		}
		for _, p := range a.pts {
			if finite(get(p.lv)) {
				metrics = append(metrics, sloMetric{name, float64(thr), get})
				a.res.SLO.Checked = append(a.res.SLO.Checked, name)
				return
			}
		}
		if len(a.pts) > 0 {
			a.warn("slo: %s is set but no valid level reports it: ignored", name)
		}
	}
	add("ttft_p95", a.res.SLO.TTFTP95MS, func(l *Level) float64 { return float64(l.TTFT.P95) })
	add("tpot_p95", a.res.SLO.TPOTP95MS, func(l *Level) float64 { return float64(l.TPOT.P95) })
	add("e2e_p95", a.res.SLO.E2EP95MS, func(l *Level) float64 { return float64(l.E2E.P95) })
	set := a.res.SLO.TTFTP95MS.OK() || a.res.SLO.TPOTP95MS.OK() || a.res.SLO.E2EP95MS.OK()
	switch {
	case !set:
		a.warn("slo: no usable SLO (set ttft_p95, tpot_p95 or e2e_p95): no SLO point")
		return
	case len(a.pts) == 0:
		a.warn("slo: no valid level to check the SLOs against: no SLO point")
		return
	case len(metrics) == 0:
		a.warn("slo: no valid level reports a latency the SLOs are set on: no SLO point")
		return
	}
	passes := func(l *Level) bool {
		for _, m := range metrics {
			if v := m.get(l); !finite(v) || v > m.thr {
				return false
			}
		}
		return true
	}
	fail := -1
	for i, p := range a.pts {
		if !passes(p.lv) {
			fail = i
			break
		}
	}
	// goodShare returns a passing level's goodput ÷ QPS, or NaN when its goodput cannot have
	// been counted under these SLOs: meeting each of k SLOs at p95 leaves at most 5% of
	// requests failing each, so the good share is at least 1 − 0.05·k (less 10 points for
	// the two populations: latencies are over requests sent in the window, goodput over
	// completions in it). A level-summary CSV's goodput_qps was counted under whatever SLO
	// its writer used.
	goodShare := func(p point) float64 {
		q, g := float64(p.lv.QPS), float64(p.lv.GoodputQPS)
		if !(q > 0) || !finite(g) {
			return math.NaN()
		}
		if share := g / q; share >= 1-0.05*float64(len(metrics))-0.10 {
			return share
		}
		a.warn("slo: level %g meets every SLO at p95 but only %.0f%% of its requests count as goodput: its goodput was counted under other SLOs (a level-summary CSV written under different ones?); goodput at the SLO point is left null",
			p.c, 100*g/q)
		return math.NaN()
	}
	switch fail {
	case -1:
		last := a.pts[len(a.pts)-1]
		a.res.SLO.MaxConcurrency, a.res.SLO.TPS = Float(last.c), Float(last.tps)
		a.res.SLO.GoodputQPS = Float(float64(last.lv.QPS) * goodShare(last))
		a.warn("slo: every valid level meets the SLOs: the limit lies beyond concurrency %g", last.c)
		return
	case 0:
		first := a.pts[0]
		for _, m := range metrics {
			if v := m.get(first.lv); !finite(v) || v > m.thr {
				a.res.SLO.Limit = m.name
				break
			}
		}
		a.warn("slo: even the first valid level (concurrency %g) misses %s: no SLO point", first.c, a.res.SLO.Limit)
		return
	}
	L, F := a.pts[fail-1], a.pts[fail]
	bestT := math.Inf(1)
	for _, m := range metrics {
		vl, vf := m.get(L.lv), m.get(F.lv)
		if finite(vf) && vf <= m.thr {
			continue
		}
		t := 0.0
		if finite(vf) && vf > vl {
			t = (m.thr - vl) / (vf - vl)
		}
		t = math.Min(math.Max(t, 0), 1)
		if t < bestT {
			bestT, a.res.SLO.Limit = t, m.name
		}
	}
	if L.c == F.c {
		bestT = 0
	}
	lc := math.Log(L.c) + bestT*(math.Log(F.c)-math.Log(L.c))
	a.res.SLO.MaxConcurrency = Float(math.Exp(lc))
	a.res.SLO.Bracket = []Float{Float(L.c), Float(F.c)}
	a.res.SLO.TPS = Float(L.tps + bestT*(F.tps-L.tps))
	// Goodput is not interpolated towards the failing level: past the SLO point most of its
	// requests miss the SLO by construction, so a straight line would undercount the point
	// itself. The point meets every SLO, so its good share is taken from the last passing
	// level and applied to the interpolated QPS.
	a.res.SLO.GoodputQPS = NaN()
	lq, lg, fq := float64(L.lv.QPS), float64(L.lv.GoodputQPS), float64(F.lv.QPS)
	switch {
	case !(lq > 0) || !finite(lg) || !finite(fq):
		a.warn("slo: goodput at the SLO point unknown: the levels carry no goodput_qps")
	default:
		if share := goodShare(L); finite(share) {
			a.res.SLO.GoodputQPS = Float((lq + bestT*(fq-lq)) * share)
		}
	}
}

// interpLog interpolates get over the valid levels linearly in log concurrency at c (clamped
// to the measured range).
func (a *analyzer) interpLog(c float64, get func(*Level) float64) float64 {
	if len(a.pts) == 0 || !finite(c) || c <= 0 {
		return math.NaN()
	}
	if c <= a.pts[0].c {
		return get(a.pts[0].lv)
	}
	for i := 1; i < len(a.pts); i++ {
		L, F := a.pts[i-1], a.pts[i]
		if c <= F.c {
			if F.c == L.c {
				return get(F.lv)
			}
			t := (math.Log(c) - math.Log(L.c)) / (math.Log(F.c) - math.Log(L.c))
			return get(L.lv) + t*(get(F.lv)-get(L.lv))
		}
	}
	return get(a.pts[len(a.pts)-1].lv)
}

func (a *analyzer) capacity() {
	p := a.opts.Plan
	if p.ConcurrentUsers <= 0 && !(p.QPS > 0) && !(p.OutputTPS > 0) {
		if p.ReplicaCostPerHour > 0 {
			a.warn("capacity: a replica cost is set but no target load (concurrent_users, qps or output_tps): no plan")
		}
		return
	}
	gpus := p.GPUsPerReplica
	if gpus <= 0 {
		gpus = 1
	}
	capc := &Capacity{ConcurrentUsers: max(p.ConcurrentUsers, 0), QPS: math.Max(p.QPS, 0), OutputTPS: math.Max(p.OutputTPS, 0),
		ReplicasAtSLO: NaN(), ReplicasAtKnee: NaN(), GPUs: NaN(), CostPerHour: NaN(), CostPerMTokens: NaN(), CostPerMTokensAtKnee: NaN()}
	qpsOf := func(l *Level) float64 { return float64(l.QPS) }
	replicas := func(c, qps, tps float64) Float {
		need := 0.0
		for _, t := range [][2]float64{{float64(capc.ConcurrentUsers), c}, {capc.QPS, qps}, {capc.OutputTPS, tps}} {
			if !(t[0] > 0) {
				continue
			}
			if !finite(t[1]) || t[1] <= 0 {
				return NaN()
			}
			need = math.Max(need, math.Ceil(t[0]/t[1]-1e-9))
		}
		return Float(need)
	}
	perM := func(tps float64) Float {
		if p.ReplicaCostPerHour > 0 && finite(tps) && tps > 0 {
			return Float(p.ReplicaCostPerHour / (tps * 3600) * 1e6)
		}
		return NaN()
	}
	if c := float64(a.res.SLO.MaxConcurrency); finite(c) {
		tps := float64(a.res.SLO.TPS)
		capc.ReplicasAtSLO = replicas(c, a.interpLog(c, qpsOf), tps)
		capc.CostPerMTokens = perM(tps)
	} else {
		a.warn("capacity: no SLO point: replicas at the SLO are unknown")
	}
	if k := a.res.Knee; k != nil {
		c := float64(k.Concurrency)
		capc.ReplicasAtKnee = replicas(c, a.interpLog(c, qpsOf), float64(k.TPS))
		capc.CostPerMTokensAtKnee = perM(float64(k.TPS))
	} else {
		a.warn("capacity: no knee: replicas at the knee are unknown")
	}
	if capc.ReplicasAtSLO.OK() {
		capc.GPUs = Float(float64(capc.ReplicasAtSLO) * float64(gpus))
		if p.ReplicaCostPerHour > 0 {
			capc.CostPerHour = Float(float64(capc.ReplicasAtSLO) * p.ReplicaCostPerHour)
		}
	}
	a.res.Capacity = capc
}
