package analysis

import (
	"math"
	"math/rand/v2"
	"slices"
)

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
		a.warnOnce(bootstrapFewLevels(n))
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
		a.warn(bootstrapFewValues(len(vals), B))
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
