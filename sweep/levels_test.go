package sweep

import (
	"reflect"
	"strings"
	"testing"
)

func TestExpand(t *testing.T) {
	for _, tc := range []struct {
		spec LevelsSpec
		want []int
		err  string
	}{
		{LevelsSpec{Start: 1, Max: 128, Factor: 2}, []int{1, 2, 4, 8, 16, 32, 64, 128}, ""},
		{LevelsSpec{Start: 1, Max: 100, Factor: 2}, []int{1, 2, 4, 8, 16, 32, 64, 100}, ""},
		{LevelsSpec{Start: 3, Max: 50, Factor: 3}, []int{3, 9, 27, 50}, ""},
		// Rounding 1·1.5^k: 1, 1.5→2, 2.25→2 (dropped), 3.375→3, 5.06→5, 7.59→8, 11.4→11, 12 appended.
		{LevelsSpec{Start: 1, Max: 12, Factor: 1.5}, []int{1, 2, 3, 5, 8, 11, 12}, ""},
		{LevelsSpec{Start: 5, Max: 5, Factor: 2}, []int{5}, ""},
		{LevelsSpec{Start: 8, Max: 30, Step: 8}, []int{8, 16, 24, 30}, ""},
		{LevelsSpec{List: []int{1, 3, 7}}, []int{1, 3, 7}, ""},
		{LevelsSpec{}, nil, "no levels"},
		{LevelsSpec{List: []int{2, 2}}, nil, "levels must increase"},
		{LevelsSpec{List: []int{-1}}, nil, "must be ≥ 1"},
		{LevelsSpec{List: []int{1}, Start: 1}, nil, "not both"},
		{LevelsSpec{Start: 0, Max: 8, Factor: 2}, nil, "start is 0"},
		{LevelsSpec{Start: 9, Max: 8, Factor: 2}, nil, "below start"},
		{LevelsSpec{Start: 1, Max: 8}, nil, "factor is 0"},
		{LevelsSpec{Start: 1, Max: 8, Factor: 0.5}, nil, "must be > 1"},
		{LevelsSpec{Start: 1, Max: 8, Factor: 2, Step: 1}, nil, "not both"},
		{LevelsSpec{Start: 1, Max: 8, Step: -1}, nil, "step is -1"},
		{LevelsSpec{Start: 1, Max: 100000, Step: 1}, nil, "more than 100 levels"},
	} {
		got, err := tc.spec.Expand()
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%+v: Expand err = %v, want %q", tc.spec, err, tc.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%+v: Expand = %v, %v; want %v", tc.spec, got, err, tc.want)
		}
	}
}
