package sim

import (
	"math"
	"strings"
	"testing"
)

func TestCountTokens(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"", 0}, {"   ", 0}, {"hello", 1}, {" hello  world\n", 2}, {"a\u00a0b\u3000c", 3}, {"tok tok tok ", 3},
	} {
		if got := CountTokens(tc.in); got != tc.want {
			t.Errorf("CountTokens(%q) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// FuzzCountTokens checks the rule against its definition, len(strings.Fields(s)).
func FuzzCountTokens(f *testing.F) {
	for _, s := range []string{"", "a b", " x\ty\n", "\xff\xfe a", "\u2003word\u2003"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := CountTokens(s), len(strings.Fields(s)); got != want {
			t.Fatalf("CountTokens(%q) = %d, strings.Fields gives %d", s, got, want)
		}
	})
}

// TestGeometricLength checks the output-length draw against the geometric distribution:
// mean 1/p = 128 and P(n = 1) = p (standard results for the geometric distribution on n ≥ 1).
func TestGeometricLength(t *testing.T) {
	const mean, n = 128, 20000
	sum, ones := 0.0, 0
	for i := range uint64(n) {
		l := outputLength(OutputGeometric, mean, 1, i+1)
		if l < 1 {
			t.Fatalf("length %d < 1", l)
		}
		if l == 1 {
			ones++
		}
		sum += float64(l)
	}
	// Standard error of the mean: sd/√n = √(1−p)/p/√n ≈ 0.9 tokens; allow 4 SE.
	if got := sum / n; math.Abs(got-mean) > 4*0.9 {
		t.Errorf("mean length %.2f, want %d ± 3.6", got, mean)
	}
	if got := float64(ones) / n; math.Abs(got-1.0/mean) > 0.003 {
		t.Errorf("P(n=1) = %.4f, want %.4f", got, 1.0/mean)
	}
	if outputLength(OutputGeometric, mean, 1, 7) != outputLength(OutputGeometric, mean, 1, 7) {
		t.Error("draw not deterministic")
	}
	if outputLength(OutputFixed, 100, 1, 3) != 100 {
		t.Error("fixed distribution is not fixed")
	}
}
