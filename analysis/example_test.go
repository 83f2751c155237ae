package analysis_test

import (
	"fmt"

	"github.com/kneecap/kneecap/analysis"
)

func ExamplePercentile() {
	sorted := []float64{1, 2, 3, 4}
	fmt.Println(analysis.Percentile(sorted, 50), analysis.Percentile(sorted, 90))
	// Output: 2.5 3.7
}

func ExampleFitUSL() {
	// The R usl package's synthetic curve: σ = κ = 0.02, λ = 1, peak at N* = 7.
	n := []float64{1, 2, 4, 6, 8, 10}
	x := []float64{1, 1.8868, 3.0769, 3.5294, 3.5398, 3.3557}
	u, err := analysis.FitUSL(n, x)
	if err != nil {
		panic(err)
	}
	fmt.Printf("σ=%.3f κ=%.3f λ=%.2f N*=%.1f\n", float64(u.Sigma), float64(u.Kappa), float64(u.Lambda), float64(u.PeakConcurrency))
	// Output: σ=0.020 κ=0.020 λ=1.00 N*=7.0
}

func ExampleLocateKnee() {
	x := []float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}
	y := []float64{0, 60, 80, 85, 90, 95, 96, 97, 98, 99}
	k, ok, _ := analysis.LocateKnee(x, y, analysis.KneedleOptions{Curve: analysis.Concave, Direction: analysis.Increasing})
	fmt.Println(k.Knee, ok)
	// Output: 2 true
}
