package config

import (
	"fmt"
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
