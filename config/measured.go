package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// measuredSections are the sections of a configuration that say what a sweep measures: those
// a resumed run (or a resumed grid's scenario) must keep. A run records the others with what
// it found (the simulator's profile filled in, the model the server serves, a new URL).
var measuredSections = []string{"workload", "sweep", "slo"}

// Measured is the measured sections of c (redacted) as flat YAML keys ("workload.seed") to
// their values; a list is one value.
func Measured(c Config) map[string]string {
	out := map[string]string{}
	b, err := yaml.Marshal(c.Redacted())
	if err != nil {
		return out
	}
	var v any
	if yaml.Unmarshal(b, &v) != nil {
		return out
	}
	var walk func(prefix string, v any)
	walk = func(prefix string, v any) {
		if m, ok := v.(map[string]any); ok {
			for k, x := range m {
				walk(strings.TrimPrefix(prefix+"."+k, "."), x)
			}
			return
		}
		if top, _, _ := strings.Cut(prefix, "."); slices.Contains(measuredSections, top) {
			out[prefix] = fmt.Sprint(v)
		}
	}
	walk("", v)
	return out
}

// DiffMeasured lists, sorted, the keys whose values differ between two Measured maps (a key
// one of them lacks differs).
func DiffMeasured(a, b map[string]string) []string {
	var out []string
	for _, m := range []map[string]string{a, b} {
		for k := range m {
			if a[k] != b[k] && !slices.Contains(out, k) {
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// KeyList joins keys for a message, the first six and a count of the rest.
func KeyList(keys []string) string {
	if len(keys) > 6 {
		return fmt.Sprintf("%s and %d more keys", strings.Join(keys[:6], ", "), len(keys)-6)
	}
	return strings.Join(keys, ", ")
}
