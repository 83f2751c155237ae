package analysis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/optimize"
)

// Batch is a fit of the batch-limited Amdahl curve of a continuous-batching server:
//
//	X(N) = m / (α + β·m),  m = min(N, S)
//
// A step of a continuous-batching engine takes t(b) = α + β·b for b running sequences, so b
// users get b ÷ t(b) tokens/s until the batch limit S (vLLM's max_num_seqs, or the KV
// budget); beyond S the extra users queue and throughput stays flat. Below S this is the
// USL with κ = 0 (Amdahl's law); the flat part is the hinge's.
type Batch struct {
	// Alpha is α, the fixed cost of one step, in seconds per token of one sequence (1/TPS at
	// N → 0 per user).
	Alpha Float `json:"alpha"`
	// Beta is β, the added step cost per running sequence, in the same unit.
	Beta Float `json:"beta"`
	// Limit is S, the concurrency where throughput stops growing.
	Limit Float `json:"limit"`
	// PlateauTPS is X(S).
	PlateauTPS Float `json:"plateau_tps"`
	// R2 is the coefficient of determination of the fit.
	R2 Float `json:"r2"`
}

// At returns the fitted X(n).
func (b Batch) At(n float64) float64 {
	m := math.Min(n, float64(b.Limit))
	return m / (float64(b.Alpha) + float64(b.Beta)*m)
}

// fitBatch fits the batch-limited Amdahl curve X(N) = m/(α + β·m), m = min(N, S), α > 0,
// β ≥ 0, S in [min N, max N], by least squares on X. For fixed S and r = β/α the model is
// linear in 1/α (closed form); (log r, S) are first scanned on a grid (S at every measured
// concurrency and midpoint, r log-spaced and r = 0, linear below S), then refined by
// Nelder–Mead (gonum/optimize) from the two best grid points. Points need
// n > 0 and x > 0, finite; fewer than 3 distinct n are an error wrapping errFit.
func fitBatch(n, x []float64) (Batch, error) {
	bad := Batch{NaN(), NaN(), NaN(), NaN(), NaN()}
	if len(n) != len(x) {
		return bad, fmt.Errorf("batch: %d concurrencies but %d throughputs: %w", len(n), len(x), errFit)
	}
	for i := range n {
		if !finite(n[i]) || !finite(x[i]) || n[i] <= 0 || x[i] <= 0 {
			return bad, fmt.Errorf("batch: point %d (%g, %g) is not positive and finite: %w", i, n[i], x[i], errFit)
		}
	}
	knots := slices.Clone(n)
	slices.Sort(knots)
	knots = slices.Compact(knots)
	if len(knots) < 3 {
		return bad, fmt.Errorf("batch: %d distinct concurrencies, need 3: %w", len(knots), errFit)
	}
	lo, hi := knots[0], knots[len(knots)-1]
	// sse returns the SSE and 1/α for r = β/α and S.
	sse := func(r, s float64) (float64, float64) {
		s = math.Min(math.Max(s, lo), hi)
		return scaleFit(x, func(i int) float64 { m := math.Min(n[i], s); return m / (1 + r*m) })
	}
	obj := func(p []float64) float64 {
		e, _ := sse(math.Exp(p[0]), p[1])
		if math.IsNaN(e) {
			return math.Inf(1)
		}
		return e
	}
	// Coarse grid over (r, S) — S at every knot and midpoint, r log-spaced, and r = 0 —
	// then Nelder–Mead from the two best grid points.
	type cand struct{ f, r, s float64 }
	var cands []cand
	for i, k := range knots {
		ss := []float64{k}
		if i+1 < len(knots) {
			ss = append(ss, (k+knots[i+1])/2)
		}
		for _, sv := range ss {
			if e, _ := sse(0, sv); !math.IsNaN(e) {
				cands = append(cands, cand{e, 0, sv})
			}
			for j := range 13 {
				r := math.Pow(10, -4+float64(j)/3) / lo // r·N spans 1e-4 … 1e0 and beyond
				if e, _ := sse(r, sv); !math.IsNaN(e) {
					cands = append(cands, cand{e, r, sv})
				}
			}
		}
	}
	slices.SortFunc(cands, func(p, q cand) int { return cmp.Compare(p.f, q.f) })
	if len(cands) == 0 {
		return bad, fmt.Errorf("batch: no finite fit: %w", errFit)
	}
	best, br, bs := cands[0].f, cands[0].r, cands[0].s
	for _, c := range cands[:min(2, len(cands))] {
		if c.r == 0 {
			continue
		}
		// An error with a location (an iteration or evaluation limit) still offers its best
		// point; a start without one is skipped.
		res, _ := optimize.Minimize(optimize.Problem{Func: obj}, []float64{math.Log(c.r), c.s}, &optimize.Settings{
			FuncEvaluations: 600,
			Converger:       &optimize.FunctionConverge{Absolute: 1e-14, Relative: 1e-10, Iterations: 30},
		}, &optimize.NelderMead{})
		if res == nil || len(res.X) < 2 {
			continue
		}
		if res.F < best {
			best, br, bs = res.F, math.Exp(res.X[0]), math.Min(math.Max(res.X[1], lo), hi)
		}
	}
	if math.IsInf(best, 0) || math.IsNaN(best) {
		return bad, fmt.Errorf("batch: optimisation failed: %w", errFit)
	}
	_, inv := sse(br, bs)
	if !(inv > 0) {
		return bad, fmt.Errorf("batch: non-positive scale: %w", errFit)
	}
	alpha := 1 / inv
	b := Batch{Alpha: Float(alpha), Beta: Float(br * alpha), Limit: Float(bs), R2: Float(rSquared(x, best))}
	b.PlateauTPS = Float(b.At(bs))
	return b, nil
}
