package analysis

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize"
)

// errFit is returned (wrapped) when a model cannot be fitted to the data.
var errFit = errors.New("analysis: cannot fit")

// uslAt returns X(N) = λN / (1 + σ(N−1) + κN(N−1)).
func uslAt(sigma, kappa, lambda, n float64) float64 {
	return lambda * n / (1 + sigma*(n-1) + kappa*n*(n-1))
}

// FitUSL fits the Universal Scalability Law X(N) = λN / (1 + σ(N−1) + κN(N−1)) to the
// points (n[i], x[i]) by least squares on X with σ ≥ 0 and κ ≥ 0.
//
// The start comes from the quadratic fit of N/X on N: since
// N/X = (1−σ)/λ + (σ−κ)/λ·N + κ/λ·N², the coefficients a + bN + cN² give
// 1/λ = a + b + c, κ = c·λ and σ = b·λ + κ (clamped to ≥ 0). The least-squares problem is
// then solved with λ profiled out — for fixed σ, κ it is linear, λ = Σ X·g / Σ g² with
// g(N) = N / (1 + σ(N−1) + κN(N−1)) — and (σ, κ) = (u², v²) searched by Nelder–Mead
// (gonum/optimize) from the quadratic start and a few others.
//
// It returns R² = 1 − SSE/SST, the peak N* = √((1−σ)/κ) and X(N*) (NaN when κ = 0 or σ ≥ 1).
// PeakConcurrencyInterval is left NaN (Analyze bootstraps it). Points need n > 0 and x > 0,
// finite; fewer than 3 distinct n are an error wrapping errFit.
func FitUSL(n, x []float64) (USL, error) { return fitUSL(n, x, nil) }

// fitUSL is FitUSL with the Nelder–Mead starts given (nil: the quadratic start and three
// fixed ones).
func fitUSL(n, x []float64, starts [][2]float64) (USL, error) {
	bad := USL{Sigma: NaN(), Kappa: NaN(), Lambda: NaN(), R2: NaN(), PeakConcurrency: NaN(), PeakTPS: NaN(),
		PeakConcurrencyInterval: [2]Float{NaN(), NaN()}}
	if len(n) != len(x) {
		return bad, fmt.Errorf("usl: %d concurrencies but %d throughputs: %w", len(n), len(x), errFit)
	}
	distinct := map[float64]bool{}
	for i := range n {
		if !finite(n[i]) || !finite(x[i]) || n[i] <= 0 || x[i] <= 0 {
			return bad, fmt.Errorf("usl: point %d (%g, %g) is not positive and finite: %w", i, n[i], x[i], errFit)
		}
		distinct[n[i]] = true
	}
	if len(distinct) < 3 {
		return bad, fmt.Errorf("usl: %d distinct concurrencies, need 3: %w", len(distinct), errFit)
	}
	sse := func(sigma, kappa float64) (float64, float64) {
		return scaleFit(x, func(i int) float64 { return uslAt(sigma, kappa, 1, n[i]) })
	}
	obj := func(p []float64) float64 {
		s, _ := sse(p[0]*p[0], p[1]*p[1])
		if math.IsNaN(s) {
			return math.Inf(1)
		}
		return s
	}
	if starts == nil {
		sigma0, kappa0 := quadraticStart(n, x)
		starts = [][2]float64{{sigma0, kappa0}, {0.05, 0.001}, {0.2, 0.01}, {0.01, 0.1}}
	}
	best := math.Inf(1)
	var bs, bk float64
	for _, st := range starts {
		init := []float64{math.Sqrt(math.Max(st[0], 1e-6)), math.Sqrt(math.Max(st[1], 1e-8))}
		// An error with a location (an iteration or evaluation limit) still offers its best
		// point; a start without one is skipped.
		res, _ := optimize.Minimize(optimize.Problem{Func: obj}, init, &optimize.Settings{
			FuncEvaluations: 4000,
			Converger:       &optimize.FunctionConverge{Absolute: 1e-14, Relative: 1e-12, Iterations: 60},
		}, &optimize.NelderMead{})
		if res == nil || len(res.X) < 2 {
			continue
		}
		if res.F < best {
			best, bs, bk = res.F, res.X[0]*res.X[0], res.X[1]*res.X[1]
		}
	}
	// The boundaries σ = 0 or κ = 0 are reached only asymptotically by (u², v²): check them.
	for _, edge := range [][2]float64{{0, bk}, {bs, 0}} {
		if s, _ := sse(edge[0], edge[1]); s <= best {
			best, bs, bk = s, edge[0], edge[1]
		}
	}
	if math.IsInf(best, 0) || math.IsNaN(best) {
		return bad, fmt.Errorf("usl: optimisation failed: %w", errFit)
	}
	_, lambda := sse(bs, bk)
	u := USL{Sigma: Float(bs), Kappa: Float(bk), Lambda: Float(lambda), PeakConcurrency: NaN(), PeakTPS: NaN(),
		PeakConcurrencyInterval: [2]Float{NaN(), NaN()}}
	u.R2 = Float(rSquared(x, best))
	if bk > 0 && bs < 1 {
		p := math.Sqrt((1 - bs) / bk)
		u.PeakConcurrency = Float(p)
		u.PeakTPS = Float(uslAt(bs, bk, lambda, p))
	}
	return u, nil
}

// At returns the fitted X(n).
func (u USL) At(n float64) float64 {
	return uslAt(float64(u.Sigma), float64(u.Kappa), float64(u.Lambda), n)
}

// quadraticStart derives σ, κ (clamped to ≥ 0) from the least-squares quadratic
// N/X = a + bN + cN².
func quadraticStart(n, x []float64) (sigma, kappa float64) {
	A := mat.NewDense(len(n), 3, nil)
	y := mat.NewVecDense(len(n), nil)
	for i := range n {
		A.Set(i, 0, 1)
		A.Set(i, 1, n[i])
		A.Set(i, 2, n[i]*n[i])
		y.SetVec(i, n[i]/x[i])
	}
	var coef mat.VecDense
	if err := coef.SolveVec(A, y); err != nil {
		return 0.05, 0.001
	}
	a, b, c := coef.AtVec(0), coef.AtVec(1), coef.AtVec(2)
	inv := a + b + c
	if !(inv > 0) || !finite(inv) {
		return 0.05, 0.001
	}
	lambda := 1 / inv
	kappa = math.Max(c*lambda, 0)
	sigma = math.Max(b*lambda+kappa, 0)
	return sigma, kappa
}

// rSquared returns 1 − sse/SST of y (NaN when y is constant).
func rSquared(y []float64, sse float64) float64 {
	var m float64
	for _, v := range y {
		m += v
	}
	m /= float64(len(y))
	var sst float64
	for _, v := range y {
		sst += (v - m) * (v - m)
	}
	if !(sst > 0) {
		return math.NaN()
	}
	return 1 - sse/sst
}
