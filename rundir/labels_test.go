package rundir

import (
	"slices"
	"testing"
)

// TestUniqueLabels: runs that share a name are labelled by their directories, with as many
// path elements as tell them apart; the same run twice gains "#2" (issue 26: two runs named
// demo read demo and demo#2).
func TestUniqueLabels(t *testing.T) {
	for _, tc := range []struct {
		labels, paths, want []string
	}{
		{[]string{"demo", "other"}, []string{"/r/a", "/r/b"}, []string{"demo", "other"}},
		{[]string{"demo", "demo"}, []string{"/r/a", "/r/b/analysis.json"}, []string{"a", "b"}},
		{[]string{"demo", "demo", "x"}, []string{"/x/runs/a", "/y/runs/a", "/z"}, []string{"x/runs/a", "y/runs/a", "x"}},
		{[]string{"demo", "demo"}, []string{"/r/a", "/r/a"}, []string{"demo", "demo#2"}},
	} {
		if got := UniqueLabels(tc.labels, tc.paths); !slices.Equal(got, tc.want) {
			t.Errorf("UniqueLabels(%q, %q) = %q, want %q", tc.labels, tc.paths, got, tc.want)
		}
	}
}
