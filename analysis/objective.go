package analysis

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SLO holds service-level objectives: a p50, p95 or p99 of TTFT, TPOT, ITL or E2E no larger
// than a duration; a zero duration is not used. It is also the slo: section of a
// configuration file (ttft_p95: 2s, itl_p99: 80ms, …).
type SLO struct {
	TTFTP95 time.Duration `yaml:"ttft_p95"`
	TPOTP95 time.Duration `yaml:"tpot_p95"`
	E2EP95  time.Duration `yaml:"e2e_p95"`
	TTFTP50 time.Duration `yaml:"ttft_p50"`
	TTFTP99 time.Duration `yaml:"ttft_p99"`
	TPOTP50 time.Duration `yaml:"tpot_p50"`
	TPOTP99 time.Duration `yaml:"tpot_p99"`
	ITLP50  time.Duration `yaml:"itl_p50"`
	ITLP95  time.Duration `yaml:"itl_p95"`
	ITLP99  time.Duration `yaml:"itl_p99"`
	E2EP50  time.Duration `yaml:"e2e_p50"`
	E2EP99  time.Duration `yaml:"e2e_p99"`
}

// SLOMetrics are the latencies an SLO can be set on, and SLOPercentiles its percentiles.
var (
	SLOMetrics     = []string{"ttft", "tpot", "itl", "e2e"}
	SLOPercentiles = []int{50, 95, 99}
)

// Objective is one SLO: the Percentile (50, 95 or 99) of Metric (ttft, tpot, itl, e2e) no
// larger than Max.
type Objective struct {
	Metric     string
	Percentile int
	Max        time.Duration
}

// Name is the objective's key: ttft_p99 (the slo: key and the name in slo.checked).
func (o Objective) Name() string { return fmt.Sprintf("%s_p%d", o.Metric, o.Percentile) }

// field returns where s keeps the objective on metric at percentile pct, or nil for a pair
// that has none.
func (s *SLO) field(metric string, pct int) *time.Duration {
	fields := map[string][3]*time.Duration{
		"ttft": {&s.TTFTP50, &s.TTFTP95, &s.TTFTP99},
		"tpot": {&s.TPOTP50, &s.TPOTP95, &s.TPOTP99},
		"itl":  {&s.ITLP50, &s.ITLP95, &s.ITLP99},
		"e2e":  {&s.E2EP50, &s.E2EP95, &s.E2EP99},
	}
	f, ok := fields[metric]
	if !ok {
		return nil
	}
	switch pct {
	case 50:
		return f[0]
	case 95:
		return f[1]
	case 99:
		return f[2]
	}
	return nil
}

// Objectives returns the objectives set (Max > 0), by metric (ttft, tpot, itl, e2e) then
// percentile.
func (s SLO) Objectives() []Objective {
	var out []Objective
	for _, m := range SLOMetrics {
		for _, p := range SLOPercentiles {
			if d := *s.field(m, p); d > 0 {
				out = append(out, Objective{m, p, d})
			}
		}
	}
	return out
}

// Any reports whether some objective is set.
func (s SLO) Any() bool { return len(s.Objectives()) > 0 }

// Get returns the objective on metric at percentile pct (0 when unset or not a pair SLO
// has).
func (s SLO) Get(metric string, pct int) time.Duration {
	if f := s.field(metric, pct); f != nil {
		return *f
	}
	return 0
}

// Set sets the objective o (a zero Max unsets it).
func (s *SLO) Set(o Objective) error {
	f := s.field(o.Metric, o.Percentile)
	if f == nil {
		return fmt.Errorf("slo: no objective %s", o.Name())
	}
	*f = o.Max
	return nil
}

// ParseObjective parses "METRIC:pPCT:DURATION" (ttft:p99:2s, itl:p50:30ms; "p" optional;
// duration 0 unsets the objective) with parseDur, which parses the duration.
func ParseObjective(s string, parseDur func(string) (time.Duration, error)) (Objective, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return Objective{}, fmt.Errorf("%q: want METRIC:PERCENTILE:DURATION such as ttft:p99:2s", s)
	}
	metric := strings.ToLower(strings.TrimSpace(parts[0]))
	if (&SLO{}).field(metric, 95) == nil {
		return Objective{}, fmt.Errorf("%q: metric %q: want ttft, tpot, itl or e2e", s, parts[0])
	}
	pct, err := strconv.Atoi(strings.TrimPrefix(strings.ToLower(strings.TrimSpace(parts[1])), "p"))
	if err != nil || (&SLO{}).field(metric, pct) == nil {
		return Objective{}, fmt.Errorf("%q: percentile %q: want p50, p95 or p99", s, parts[1])
	}
	d, err := parseDur(parts[2])
	if err != nil {
		return Objective{}, fmt.Errorf("%q: %w", s, err)
	}
	if d < 0 {
		return Objective{}, fmt.Errorf("%q: duration must not be negative", s)
	}
	return Objective{metric, pct, d}, nil
}

// LatencyOf returns l's latency distribution that metric names, nil for another name or a
// rate latency of a closed-loop level: ttft, tpot, itl and e2e (measured from the send time),
// and on an arrival-rate level ttft_scheduled, e2e_scheduled and schedule_lag (RateLevel). It is
// the one reading of a latency by name, for the SLOs, the charts and the level-summary CSV.
func (l *Level) LatencyOf(metric string) *Latency {
	switch metric {
	case "ttft":
		return &l.TTFT
	case "tpot":
		return &l.TPOT
	case "itl":
		return &l.ITL
	case "e2e":
		return &l.E2E
	}
	if l.RateLevel == nil {
		return nil
	}
	switch metric {
	case "ttft_scheduled":
		return &l.TTFTScheduled
	case "e2e_scheduled":
		return &l.E2EScheduled
	case "schedule_lag":
		return &l.ScheduleLag
	}
	return nil
}

// Stat returns lat's statistic that stat names (mean, p50, p90, p95, p99), nil for another
// name.
func (lat *Latency) Stat(stat string) *Float {
	switch stat {
	case "mean":
		return &lat.Mean
	case "p50":
		return &lat.P50
	case "p90":
		return &lat.P90
	case "p95":
		return &lat.P95
	case "p99":
		return &lat.P99
	}
	return nil
}

// Percentile returns lat's percentile pct (50, 90, 95 or 99), NaN for another.
func (lat Latency) Percentile(pct int) Float {
	if f := lat.Stat("p" + strconv.Itoa(pct)); f != nil {
		return *f
	}
	return NaN()
}

// requestLimits returns the per-request limits of goodput: for TTFT, TPOT and E2E the
// threshold of the highest percentile set on it (0: none). A request is good when it meets
// each; ITL, a distribution over a request's gaps, sets none.
func (s SLO) requestLimits() requestSLO {
	limit := func(metric string) float64 {
		for i := len(SLOPercentiles) - 1; i >= 0; i-- {
			if d := *s.field(metric, SLOPercentiles[i]); d > 0 {
				return float64(d)
			}
		}
		return 0
	}
	return requestSLO{ttft: limit("ttft"), tpot: limit("tpot"), e2e: limit("e2e")}
}

// requestSlack is the share of requests a level meeting every SLO may have failing the
// per-request limits (requestLimits): Σ (100 − pct)/100 over TTFT, TPOT and E2E, pct the
// percentile whose threshold is the limit.
func (s SLO) requestSlack() float64 {
	slack := 0.0
	for _, metric := range []string{"ttft", "tpot", "e2e"} {
		for i := len(SLOPercentiles) - 1; i >= 0; i-- {
			if *s.field(metric, SLOPercentiles[i]) > 0 {
				slack += float64(100-SLOPercentiles[i]) / 100
				break
			}
		}
	}
	return slack
}

// ObjectiveLabel writes an objective's name (ttft_p99, slo.limit's and slo.checked's names)
// as the reports do: "TTFT p99". A name that is no objective's ("capacity") is returned as
// it is.
func ObjectiveLabel(name string) string {
	metric, pct, ok := strings.Cut(name, "_p")
	if !ok || (&SLO{}).field(metric, atoi(pct)) == nil {
		return name
	}
	return strings.ToUpper(metric) + " p" + pct
}

// atoi is strconv.Atoi without its error (-1).
func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return -1
	}
	return n
}

// AllObjectives returns the SLOs a result sets: Objectives, or for an analysis.json written
// before it the p95 keys (ttft_p95_ms, tpot_p95_ms, e2e_p95_ms) that are set, as objectives.
func (s SLOResult) AllObjectives() []SLOObjective {
	if len(s.Objectives) > 0 {
		return s.Objectives
	}
	var out []SLOObjective
	for _, o := range []struct {
		metric string
		max    Float
	}{{"ttft", s.TTFTP95MS}, {"tpot", s.TPOTP95MS}, {"e2e", s.E2EP95MS}} {
		if o.max.OK() && o.max > 0 {
			name := Objective{Metric: o.metric, Percentile: 95}.Name()
			out = append(out, SLOObjective{Name: name, Metric: o.metric, Percentile: 95, MaxMS: o.max})
		}
	}
	return out
}
