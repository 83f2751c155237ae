package analysis

import (
	"math"
	"testing"
)

// TestFloatFormat: the one number format of the reports and charts.
func TestFloatFormat(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{2666.67, "2667"}, {100, "100"}, {22.64, "22.6"}, {10, "10.0"}, {4.254, "4.25"}, {0, "0.00"},
		{-37.5, "-37.5"}, {1.5e6, "1.5e+06"}, {0.0004, "0.0004"}, {math.NaN(), "—"}, {math.Inf(1), "—"},
		// The decimals go by the number rounded to three significant digits.
		{99.96, "100"}, {9.996, "10.0"}, {-99.96, "-100"}, {0.9996, "1.00"}, {99.94, "99.9"},
		// The million and 0.01 cutoffs go by the number itself; below 0.01 a non-zero
		// value keeps three significant digits rather than printing as zero.
		{999600, "999600"}, {999499, "999499"}, {-999999, "-999999"}, {1e6, "1e+06"},
		{0.0042, "0.0042"}, {0.001234, "0.00123"}, {0.009996, "0.01"}, {0.01, "0.01"},
	} {
		if got := Float(tc.v).Format(); got != tc.want {
			t.Errorf("Float(%g).Format() = %q, want %q", tc.v, got, tc.want)
		}
	}
}
