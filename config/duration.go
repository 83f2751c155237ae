package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// ParseDuration parses a duration with a unit ("5s", "250ms", "1m30s") as a flag value, with
// the configuration file's wording for a bare number: `duration needs a unit: write "5s",
// not 5`. "0" is 0 (as time.ParseDuration has it: "0 = not used" needs no unit).
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t != "0" {
		if _, err := strconv.ParseFloat(t, 64); err == nil {
			return 0, fmt.Errorf("%s", unitProblem(t))
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 5s, 250ms or 1m30s", s)
	}
	return d, nil
}

// unitProblemAt is the problem of key's duration given as the bare number v, suggesting the
// unit that puts v nearest key's default (in ratio): slo.tpot_p95: 50 reads 50ms (default
// 50ms), slo.ttft_p95: 500 reads 500ms (default 2s), sweep.warmup: 5 reads 5s. Without a
// default (0, or not found) it suggests seconds.
func unitProblemAt(v, key string) string {
	def, ok := defaultDuration(key)
	x, err := strconv.ParseFloat(v, 64)
	if !ok || def <= 0 || err != nil || !(x > 0) {
		return unitProblem(v)
	}
	best, bestDist := "s", math.Inf(1)
	for _, u := range []struct {
		name string
		d    time.Duration
	}{{"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}} {
		if dist := math.Abs(math.Log(x * float64(u.d) / float64(def))); dist < bestDist {
			best, bestDist = u.name, dist
		}
	}
	return fmt.Sprintf("duration needs a unit: write %q, not %s", v+best, v)
}

// defaultDuration is the default of the duration at key (a dotted path of yaml names).
func defaultDuration(key string) (time.Duration, bool) {
	v := reflect.ValueOf(Default())
	for _, name := range strings.Split(key, ".") {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return 0, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return 0, false
		}
		f, ok := fieldByYAML(v.Type(), name)
		if !ok {
			return 0, false
		}
		v = v.FieldByIndex(f.Index)
	}
	d, ok := v.Interface().(time.Duration)
	return d, ok
}

// fieldByYAML is t's field whose yaml name is name.
func fieldByYAML(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		if n, ok := yamlName(t.Field(i)); ok && n == name {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

// unitProblem is the problem of a duration given as the bare number v.
func unitProblem(v string) string {
	return fmt.Sprintf("duration needs a unit: write %q, not %s", v+"s", v)
}

// ShortDuration formats d as time.Duration.String does without its zero tails: 3m, not 3m0s.
func ShortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// ParseList parses a flag's comma-separated list ("1,2,4"), each item by item (white space
// around it trimmed). An empty item ("1,,2", a trailing comma) is an error naming its place:
// a typo, not a level to skip. example completes "empty list (want a list such as …)".
func ParseList[T any](v, example string, item func(string) (T, error)) ([]T, error) {
	if strings.TrimSpace(v) == "" {
		return nil, fmt.Errorf("empty list (want a list such as %s)", example)
	}
	fields := strings.Split(v, ",")
	out := make([]T, 0, len(fields))
	for i, f := range fields {
		f = strings.TrimSpace(f)
		if f == "" {
			return nil, fmt.Errorf("item %d of %q is empty (want a list such as %s)", i+1, v, example)
		}
		x, err := item(f)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}
