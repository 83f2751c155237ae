package summary

import (
	"encoding/json"
	"testing"
)

// TestPythonNumbers: NaN, Infinity and -Infinity outside strings (Python's json.dumps with its
// default allow_nan; https://docs.python.org/3/library/json.html#infinite-and-nan-number-values)
// become null and are counted; inside strings, escaped quotes included, they are kept.
func TestPythonNumbers(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		n        int
	}{
		{`{"a": 1}`, `{"a": 1}`, 0},
		{`{"a": NaN, "b": [Infinity, -Infinity]}`, `{"a": null, "b": [null, null]}`, 3},
		{`{"NaN": "NaN \" Infinity", "x": NaN}`, `{"NaN": "NaN \" Infinity", "x": null}`, 1},
		{`{"s": "a\\", "x": -Infinity}`, `{"s": "a\\", "x": null}`, 1},
		{`{"cut": "NaN`, `{"cut": "NaN`, 0},
	} {
		got, n := pythonNumbers([]byte(tc.in))
		if string(got) != tc.want || n != tc.n {
			t.Errorf("pythonNumbers(%s) = %s, %d; want %s, %d", tc.in, got, n, tc.want, tc.n)
		}
		if tc.n > 0 && !json.Valid(got) {
			t.Errorf("pythonNumbers(%s) = %s: not JSON", tc.in, got)
		}
	}
}
