package main

import (
	"fmt"
	"strings"
)

// parseList parses a flag's comma-separated list ("1,2,4"), each item by item (white space
// around it trimmed). An empty item ("1,,2", a trailing comma) is an error naming its place:
// a typo, not a level to skip. example completes "empty list (want a list such as …)".
func parseList[T any](v, example string, item func(string) (T, error)) ([]T, error) {
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
