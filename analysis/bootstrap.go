package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
)

// residualBootstrap resamples the residuals of fit at x, refits with refit and collects the
// statistics each refit returns (one per name; NaN when a refit has none, nil when it
// failed); it returns each statistic's 2.5th and 97.5th percentiles, or NaN when fewer than
// half of the resamples gave a value, with a warning naming the statistic (none for a
// statistic named "").
//
// The residuals are relative, (y − ŷ) ÷ ŷ, and a resample is ŷ·(1 + r*): a level's throughput
// noise is proportional to its throughput (its confidence interval is a near-constant share
// of it), so pooling absolute residuals would give the plateau levels, where the knee is
// decided, the small errors of the first levels. (On the batch formula with 0.25–1% relative
// noise, S = 4, 16 and 32, 20 seeds each, this raised the share of seeds whose interval
// covers the true S from 65–85% to 75–95%.) When some fitted value is not positive, absolute
// residuals are used. Every model
// here has fitParams parameters, so the residuals are rescaled by √(n ÷ (n − fitParams))
// first (Davison and Hinkley 1997, §6.2.3: raw residuals are smaller than the errors they
// stand for), and with fewer than minIntervalLevels points there is no interval (a warning
// says so): a three-parameter curve through four points leaves one residual and a bootstrap
// of it claims a precision the levels do not have.
// stopped reports whether stop (Options.Stop) is closed.
func stopped(stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// stopped reports whether the analysis was interrupted (Options.Stop): its steps, fits and
// resamples end at once, and the caller discards the result.
func (a *analyzer) stopped() bool { return stopped(a.opts.Stop) }

func (a *analyzer) residualBootstrap(x, y []float64, fitted func(float64) float64, names []string, refit func(ys []float64) []float64) [][2]Float {
	out := make([][2]Float, len(names))
	for i := range out {
		out[i] = [2]Float{NaN(), NaN()}
	}
	B := a.opts.Bootstrap
	if B <= 0 {
		return out
	}
	n := len(x)
	if n < minIntervalLevels {
		a.warnOnce(bootstrapFewLevels(n))
		return out
	}
	scale := math.Sqrt(float64(n) / float64(n-fitParams))
	rng := rand.New(rand.NewPCG(a.opts.Seed, 0x6b6e656563617021))
	fit := make([]float64, len(x))
	res := make([]float64, len(x))
	relative := true
	for i := range x {
		fit[i] = fitted(x[i])
		res[i] = (y[i] - fit[i]) * scale
		relative = relative && fit[i] > 0
	}
	if relative {
		for i := range res {
			res[i] /= fit[i]
		}
	}
	ys := make([]float64, len(x))
	vals := make([][]float64, len(names))
	refits := 0
	for range B {
		if a.stopped() {
			return out
		}
		for i := range ys {
			r := res[rng.IntN(len(res))]
			if relative {
				r *= fit[i]
			}
			ys[i] = math.Max(fit[i]+r, 1e-9)
		}
		v := refit(ys)
		if v == nil {
			continue
		}
		refits++
		for i := range names {
			if i < len(v) && finite(v[i]) {
				vals[i] = append(vals[i], v[i])
			}
		}
	}
	if refits*2 < B {
		a.warn(bootstrapFewValues("", refits, B))
		return out
	}
	for i, name := range names {
		if len(vals[i])*2 < B {
			if name != "" {
				a.warn(bootstrapFewValues(name, len(vals[i]), B))
			}
			continue
		}
		slices.Sort(vals[i])
		out[i] = [2]Float{Float(Percentile(vals[i], 2.5)), Float(Percentile(vals[i], 97.5))}
	}
	return out
}

// bootstrapUSL sets the USL peak interval and returns the interval of the marginal-gain
// point on the USL curve, when knee names it (else NaN).
func (a *analyzer) bootstrapUSL(x, y []float64, gain, lo, hi float64, knee string) [2]Float {
	if a.usl == nil || a.opts.Bootstrap <= 0 {
		return [2]Float{NaN(), NaN()}
	}
	ivs := a.residualBootstrap(x, y, a.usl.At, []string{"", knee}, func(ys []float64) []float64 {
		u, err := fitUSL(x, ys, [][2]float64{{float64(a.usl.Sigma), float64(a.usl.Kappa)}})
		if err != nil {
			return nil
		}
		k := math.NaN()
		if knee != "" {
			if v, status := doublingKnee(u.At, lo, hi, gain); status != "none" {
				k = v
			}
		}
		return []float64{float64(u.PeakConcurrency), k}
	})
	if a.usl.PeakConcurrency.OK() {
		a.usl.PeakConcurrencyInterval = ivs[0]
	}
	return ivs[1]
}

// bootstrapCurve returns the bootstrap intervals of the breakpoint (when bpName names it)
// and of the marginal-gain point (when effName names it) of the curve refit fits to
// resampled throughputs around fitted; refit returns the curve and its breakpoint.
func (a *analyzer) bootstrapCurve(x, y []float64, gain, lo, hi float64, fitted func(float64) float64, bpName, effName string,
	refit func(ys []float64) (func(float64) float64, float64, error)) (bp, eff [2]Float) {
	ivs := a.residualBootstrap(x, y, fitted, []string{bpName, effName}, func(ys []float64) []float64 {
		curve, b, err := refit(ys)
		if err != nil {
			return nil
		}
		k := math.NaN()
		if effName != "" {
			if v, status := doublingKnee(curve, lo, hi, gain); status != "none" {
				k = v
			}
		}
		return []float64{b, k}
	})
	if bpName == "" {
		ivs[0] = [2]Float{NaN(), NaN()}
	}
	if effName == "" {
		ivs[1] = [2]Float{NaN(), NaN()}
	}
	return ivs[0], ivs[1]
}
