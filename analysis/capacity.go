package analysis

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// minRateIntervalLevels is the least number of valid levels with a completion rate for the
// capacity's bootstrap interval: two residual degrees of freedom after the one-parameter
// model min(arrival rate, capacity).
const minRateIntervalLevels = 3

// capacity estimates the maximum sustainable rate (DESIGN §4.15). The valid levels, by the
// arrival rate their windows realised (x), are split where their sustainable verdicts
// disagree least with "sustainable below, unsustainable above" (split): L, the last level
// below the split, is sustainable and F, the first above it, unsustainable. Below capacity
// the completion rate follows the arrival rate, y = x; past it the replica completes
// requests at its capacity whatever arrives, so the estimate μ̂ is the mean completion rate
// (completionRate) of the unsustainable levels from F on, clamped to at least what L
// completed, y_L (x_L when unknown), and at most x_F: capacity_rps = min(max(μ̂, y_L), x_F).
// (A level that sustained its rate completed about that rate; one taken for sustainable near
// capacity, its growth lost in the noise of a short window, completed no more than the
// capacity: y_L bounds the capacity from below either way, where x_L would not.) Without an
// unsustainable level the capacity is at least the largest sustained rate (capacity_bound
// at_least); without a sustainable one below F, at most x_F (at_most, capacity_rps = min(μ̂,
// x_F)). A table that cannot tell which levels were sustained (verdictless) and counts every
// one sustained has its capacity from the plateau of its output TPS instead
// (plateauCapacity). No capacity, bound or interval end is ever above the largest completion
// rate measured at a valid level (capByCompletion): no level showed the replica completing
// more.
func (r *rater) capacity() {
	if len(r.pts) == 0 {
		return
	}
	f, off := r.split()
	if f == len(r.pts) && r.verdictless() && r.plateauCapacity() {
		r.capByCompletion()
		return
	}
	r.rr.CapacityRule = capacityRuleSplit
	if f == len(r.pts) {
		r.capacityAtLeast()
		return
	}
	if len(off) > 0 {
		r.warn(rateNotMonotone(r.pts[f].x, off))
	}
	var u []point // the unsustainable levels from F on
	for _, p := range r.pts[f:] {
		if !p.lv.Sustainable {
			u = append(u, p)
		}
	}
	mu, tps := meanOf(u, func(p point) float64 { return p.y }), meanOf(u, func(p point) float64 { return p.tps })
	lo, hi := 0.0, r.pts[f].x
	if f > 0 {
		L := r.pts[f-1]
		r.rr.CapacityBracket = []Float{Float(L.x), Float(hi)}
		lo = L.x
		if finite(L.y) {
			lo = math.Min(L.y, hi)
		}
	} else {
		r.rr.CapacityBound = "at_most"
		r.warn(rateCapacityBelow(hi, mu))
	}
	c := math.Min(math.Max(mu, lo), hi)
	how := fmt.Sprintf("the mean completion rate of the %d unsustainable level(s), %s requests/s", len(u), Float(mu).Format())
	switch {
	case !finite(mu) && f > 0:
		c, how = (lo+hi)/2, "the midpoint of the bracket (the unsustainable levels have no completion rate)"
	case !finite(mu):
		c = math.NaN()
	case mu < lo:
		how += fmt.Sprintf(", below what the last sustained level completed: the capacity is that rate, %s", Float(lo).Format())
	case mu > hi:
		how += fmt.Sprintf(", above the smallest unsustained rate: the capacity is that rate, %s", Float(hi).Format())
	}
	r.rr.CapacityRPS = Float(c)
	if finite(mu) && mu > 0 && finite(tps) {
		r.rr.CapacityTPS = Float(tps * c / mu)
	}
	iv, ivHow := r.capacityInterval(f, u, mu, lo, hi)
	r.rr.CapacityInterval = iv
	where := fmt.Sprintf("between the sustained %s and the unsustained %s requests/s", Float(r.pts[max(f-1, 0)].x).Format(), Float(hi).Format())
	if L := r.pts[max(f-1, 0)]; f > 0 && c < L.x {
		where = fmt.Sprintf("below the %s requests/s arriving at the last level the backlog test called sustained, which completed %s/s; the next, %s requests/s, was not sustained",
			Float(L.x).Format(), Float(L.y).Format(), Float(hi).Format())
	}
	if f == 0 {
		where = fmt.Sprintf("below the first level, %s requests/s, which was not sustained", Float(hi).Format())
	}
	r.rr.CapacityReason = fmt.Sprintf("%s, %s; 95%% interval %s", how, where, ivHow)
	r.capByCompletion()
}

// capacityAtLeast is the capacity when every valid level sustained its rate: at least the
// largest rate sustained, and no more than what was seen completed — min(the largest
// realised rate, the largest completion rate y_max). Its interval is [that, null], its lower
// end y_max less its precision when y_max binds (a completion rate is measured, the arrivals
// counted).
func (r *rater) capacityAtLeast() {
	top := r.pts[len(r.pts)-1]
	c, tps, lo := top.x, top.tps, top.x
	r.rr.CapacityReason = fmt.Sprintf("every valid level sustained its rate: the capacity is at least the largest, %s requests/s", Float(top.x).Format())
	if ymax, at := r.maxCompletion(); finite(ymax) && ymax < c {
		c, tps, lo = ymax, at.tps, ymax-precision(at)
		r.rr.CapacityReason = fmt.Sprintf("every valid level sustained its rate: the capacity is at least the largest completion rate measured, %s requests/s (at the level offered %s), not the largest rate that arrived, %s requests/s, which no level was seen completing",
			Float(ymax).Format(), at.lv.OfferedRPS.Format(), Float(top.x).Format())
	}
	r.rr.CapacityBound, r.rr.CapacityRPS, r.rr.CapacityTPS = "at_least", Float(c), Float(tps)
	r.rr.CapacityInterval = [2]Float{Float(lo), NaN()}
	r.warn(rateCapacityBeyond(c))
}

// maxCompletion returns the largest completion rate of a valid level and its point (NaN
// when no level has one).
func (r *rater) maxCompletion() (float64, point) {
	best, at := math.NaN(), point{}
	for _, p := range r.pts {
		if finite(p.y) && !(p.y <= best) {
			best, at = p.y, p
		}
	}
	return best, at
}

// precision is how far a level's completion rate may be from the rate its replica sustained
// over the window: the larger of its own 95% CI (ciFloor) and MaxRateOff of it (a saturated
// level's slices can be so even that its CI is 0, while the window's edges cut the tokens of
// the requests in flight).
func precision(p point) float64 { return math.Max(ciFloor([]point{p}), MaxRateOff*p.y) }

// capByCompletion holds the capacity, the at_least bound and the interval's lower end at most
// y_max, the largest completion rate measured at a valid level, and the interval's upper end
// at most y_max plus its precision: no level showed the replica completing more, and the true
// capacity may exceed y_max only by what the measurement of y_max leaves open. capacity_tps
// scales with the capacity; the reason says when it binds.
func (r *rater) capByCompletion() {
	ymax, at := r.maxCompletion()
	rr := r.rr
	if !finite(ymax) {
		return
	}
	if c := float64(rr.CapacityRPS); finite(c) && c > ymax {
		if c > 0 {
			rr.CapacityTPS = Float(float64(rr.CapacityTPS) * ymax / c)
		}
		rr.CapacityRPS = Float(ymax)
		rr.CapacityReason += fmt.Sprintf("; held at the largest completion rate measured, %s requests/s: no level completed more", Float(ymax).Format())
	}
	top := ymax + precision(at)
	iv := &rr.CapacityInterval
	if iv[0].OK() && float64(iv[0]) > ymax {
		iv[0] = Float(ymax)
	}
	if iv[1].OK() && float64(iv[1]) > top {
		iv[1] = Float(top)
	}
}

// split returns the index f of the first valid level above capacity: the k in 0 … n that
// minimises the verdicts against "levels [0, k) sustainable, [k, n) not" (an unsustainable
// level below k, a sustainable one from k), ties going to the k whose bracket (x_{k−1},
// x_k] holds the mean completion rate of the unsustainable levels from k, else to the
// smallest (the lower capacity). off lists the offered rates whose verdict disagrees with
// the split. f = n when no level is unsustainable.
func (r *rater) split() (f int, off []float64) {
	n := len(r.pts)
	cost := make([]int, n+1)
	for k := range cost {
		for i, p := range r.pts {
			if (i < k) == !p.lv.Sustainable {
				cost[k]++
			}
		}
	}
	best := slices.Min(cost)
	f = -1
	for k := range cost {
		if cost[k] != best {
			continue
		}
		if f < 0 {
			f = k
		}
		if k == n || k == 0 {
			continue
		}
		var u []point
		for _, p := range r.pts[k:] {
			if !p.lv.Sustainable {
				u = append(u, p)
			}
		}
		if mu := meanOf(u, func(p point) float64 { return p.y }); mu > r.pts[k-1].x && mu <= r.pts[k].x {
			f = k
			break
		}
	}
	for i, p := range r.pts {
		if (i < f) == !p.lv.Sustainable {
			off = append(off, p.x)
		}
	}
	return f, off
}

// meanOf is the mean of get over ps where it is finite, or NaN.
func meanOf(ps []point, get func(point) float64) float64 {
	sum, n := 0.0, 0
	for _, p := range ps {
		if v := get(p); finite(v) {
			sum, n = sum+v, n+1
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// capacityInterval is the 95% interval of the capacity: a residual bootstrap of the
// completion rates around the model y = min(arrival rate, capacity) (Options.Bootstrap resamples,
// seeded by Options.Seed), over the levels below F and the unsustainable ones from F that
// have a completion rate, fitted ŷ = min(x, μ̂). A completion rate is a count over a window,
// its noise growing as √rate, so the residuals are Pearson residuals (y − ŷ) ÷ √(ŷ ÷ T), T the
// level's window (relative residuals (y − ŷ) ÷ ŷ when some level's window is unknown),
// rescaled by √(n ÷ (n − 1)). Each resample draws a residual for every unsustainable level
// and for L, y* = ŷ + r*·√(ŷ ÷ T) (or ŷ·(1 + r*)), and re-reads the capacity, min(max(mean
// of the unsustainable y*, y*_L), x_F); the interval is their 2.5th and 97.5th percentiles.
// The interval is at least ± ciFloor, the unsustainable levels' own 95% CI: a saturated
// replica completes requests so regularly that the residuals there are nearly 0, and a
// percentile interval of them would claim more than one window can resolve.
// With fewer than minRateIntervalLevels such levels, or Bootstrap 0, the interval is [lo, hi]
// itself, the clamp of the estimate (at_most: [null, x_F]), its lower end at most the
// estimate less ciFloor. It returns the interval and how
// it was found.
func (r *rater) capacityInterval(f int, u []point, mu, lo, hi float64) ([2]Float, string) {
	// The clamp, its lower end at most the estimate less the unsustainable levels' own 95% CI,
	// as the bootstrap's interval is: y_L, measured, may exceed the capacity by that much.
	bracket := [2]Float{Float(math.Min(lo, math.Min(math.Max(mu, lo), hi)-ciFloor(u))), Float(hi)}
	if f == 0 {
		bracket[0] = NaN()
	}
	type obs struct{ y, yhat, w float64 }
	var below, us []obs
	for _, p := range r.pts[:f] {
		if finite(p.y) && p.x > 0 {
			below = append(below, obs{p.y, math.Min(p.x, mu), float64(p.lv.WindowS)})
		}
	}
	for _, p := range u {
		if finite(p.y) && mu > 0 {
			us = append(us, obs{p.y, mu, float64(p.lv.WindowS)})
		}
	}
	used := append(slices.Clip(below), us...)
	var lobs *obs // L, whose completion rate bounds the capacity from below
	if f > 0 && len(below) > 0 && finite(r.pts[f-1].y) {
		lobs = &below[len(below)-1]
	}
	B := r.opts.Bootstrap
	switch {
	case B <= 0 || !finite(mu) || len(us) == 0:
		return bracket, "the clamp itself (no bootstrap)"
	case len(used) < minRateIntervalLevels:
		r.warn(rateBootstrapFew(len(used)))
		return bracket, "the clamp itself (too few levels for a bootstrap)"
	}
	pearson := true
	for _, o := range used {
		pearson = pearson && finite(o.w) && o.w > 0 && o.yhat > 0
	}
	sd := func(o obs) float64 {
		if pearson {
			return math.Sqrt(o.yhat / o.w)
		}
		return o.yhat
	}
	scale := math.Sqrt(float64(len(used)) / float64(len(used)-1))
	res := make([]float64, len(used))
	for i, o := range used {
		res[i] = scale * (o.y - o.yhat) / sd(o)
	}
	rng := rand.New(rand.NewPCG(r.opts.Seed, 0x6b6e656563617021))
	draw := func(o obs) float64 { return math.Max(o.yhat+res[rng.IntN(len(res))]*sd(o), 0) }
	vals := make([]float64, 0, B)
	for range B {
		if r.stopped() {
			return bracket, "the clamp itself (interrupted)"
		}
		sum := 0.0
		for _, o := range us {
			sum += draw(o)
		}
		low := lo
		if lobs != nil {
			low = math.Min(draw(*lobs), hi)
		}
		vals = append(vals, math.Min(math.Max(sum/float64(len(us)), low), hi))
	}
	slices.Sort(vals)
	c := math.Min(math.Max(mu, lo), hi)
	h := ciFloor(u)
	iv := [2]Float{Float(math.Min(Percentile(vals, 2.5), c-h)), Float(math.Max(Percentile(vals, 97.5), c+h))}
	kind := "Pearson"
	if !pearson {
		kind = "relative"
	}
	return iv, fmt.Sprintf("by a residual bootstrap (%d resamples, %s residuals) of the completion rates around min(arrival rate, capacity), at least ± the unsustainable levels' own 95%% CI", B, kind)
}

// ciFloor is the mean half-width of the 95% CI of the completion rate of the levels u:
// output_tps_ci95 ÷ mean output tokens (batch means over the window's slices, DESIGN §1);
// 0 when no level has one.
func ciFloor(u []point) float64 {
	h := meanOf(u, func(p point) float64 {
		ci, n := float64(p.lv.OutputTPSCI95), float64(p.lv.MeanOutputTokens)
		if finite(ci) && ci >= 0 && n > 0 {
			return ci / n
		}
		return math.NaN()
	})
	if !finite(h) {
		return 0
	}
	return h
}
