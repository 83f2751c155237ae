package analysis

import (
	"strings"
	"testing"
	"time"
)

// sloLevels are levels at 1…16 whose TTFT p50, p95 and p99 are c×10, c×40 and c×100 ms
// (p95 null when noP95, as vLLM's default files report only p99) and whose ITL p99 is c×5 ms.
func sloLevels(noP95 bool) []Level {
	var out []Level
	for _, c := range []int{1, 2, 4, 8, 16} {
		f := float64(c)
		ttft := Latency{Float(20 * f), Float(10 * f), NaN(), Float(40 * f), Float(100 * f)}
		if noP95 {
			ttft.P95 = NaN()
		}
		out = append(out, Level{Concurrency: c, OutputTPS: Float(100 * f), Valid: true, Steady: true,
			TTFT: ttft, TPOT: NoLatency(), E2E: NoLatency(),
			ITL: Latency{NaN(), NaN(), NaN(), NaN(), Float(5 * f)}})
	}
	return out
}

// An SLO on any of p50, p95 and p99 of TTFT, or on ITL, binds at the level its percentile
// crosses the threshold: TTFT p99 = 100c ms ≤ 400 ms holds to c = 4 and fails at 8, so the
// point is at the crossing on log concurrency between 4 and 8 (here exactly at 4: the
// threshold is L's value), and the limit is named by its percentile.
func TestSLOPercentiles(t *testing.T) {
	tests := []struct {
		name  string
		slo   SLO
		limit string
		lo    float64 // the bracket's passing level
	}{
		{"ttft p99", SLO{TTFTP99: 500 * time.Millisecond}, "ttft_p99", 4},
		{"ttft p50", SLO{TTFTP50: 50 * time.Millisecond}, "ttft_p50", 4},
		{"ttft p95", SLO{TTFTP95: 200 * time.Millisecond}, "ttft_p95", 4},
		{"itl p99", SLO{ITLP99: 30 * time.Millisecond}, "itl_p99", 4},
		{"tightest binds", SLO{TTFTP50: time.Second, ITLP99: 15 * time.Millisecond}, "itl_p99", 2},
	}
	for _, tt := range tests {
		r := Analyze(sloLevels(false), Meta{}, Options{SLO: tt.slo})
		if r.SLO.Limit != tt.limit || len(r.SLO.Bracket) != 2 || float64(r.SLO.Bracket[0]) != tt.lo {
			t.Errorf("%s: limit %q bracket %v, want %q from %g; warnings %q", tt.name, r.SLO.Limit, r.SLO.Bracket, tt.limit, tt.lo, r.Warnings)
		}
		if c := float64(r.SLO.MaxConcurrency); !(c >= tt.lo && c <= 2*tt.lo) {
			t.Errorf("%s: max concurrency %g outside [%g, %g]", tt.name, c, tt.lo, 2*tt.lo)
		}
		if len(r.SLO.Objectives) != len(tt.slo.Objectives()) {
			t.Errorf("%s: objectives %+v, want %d", tt.name, r.SLO.Objectives, len(tt.slo.Objectives()))
		}
	}
}

// A percentile the levels do not report is checked at the next higher one they do, with a
// warning, never at a lower (looser) one; a metric not reported at or above it is ignored.
func TestSLOHigherPercentile(t *testing.T) {
	r := Analyze(sloLevels(true), Meta{}, Options{SLO: SLO{TTFTP95: 500 * time.Millisecond}})
	if r.SLO.Limit != "ttft_p99" || len(r.SLO.Checked) != 1 || r.SLO.Checked[0] != "ttft_p99" {
		t.Errorf("limit %q checked %q, want ttft_p99 (p95 missing)", r.SLO.Limit, r.SLO.Checked)
	}
	if len(r.SLO.Objectives) != 1 || r.SLO.Objectives[0].CheckedAs != "ttft_p99" || r.SLO.Objectives[0].MaxMS != 500 {
		t.Errorf("objectives %+v", r.SLO.Objectives)
	}
	if !hasWarning(r, "ttft_p95 is set but no valid level reports it: checked against ttft_p99") {
		t.Errorf("warnings %q lack the fallback", r.Warnings)
	}
	r = Analyze(sloLevels(true), Meta{}, Options{SLO: SLO{ITLP50: time.Second}})
	if len(r.SLO.Checked) != 1 || r.SLO.Checked[0] != "itl_p99" {
		t.Errorf("itl p50 checked %q, want itl_p99", r.SLO.Checked)
	}
	r = Analyze(sloLevels(true), Meta{}, Options{SLO: SLO{TPOTP50: time.Second}})
	if len(r.SLO.Checked) != 0 || !hasWarning(r, "tpot_p50 is set but no valid level reports it: ignored") {
		t.Errorf("tpot p50 checked %q warnings %q", r.SLO.Checked, r.Warnings)
	}
}

func TestParseObjective(t *testing.T) {
	tests := []struct {
		in   string
		want Objective
		err  string
	}{
		{"ttft:p99:2s", Objective{"ttft", 99, 2 * time.Second}, ""},
		{"ITL:50:30ms", Objective{"itl", 50, 30 * time.Millisecond}, ""},
		{"e2e:p95:0s", Objective{"e2e", 95, 0}, ""},
		{"ttft:p90:2s", Objective{}, "want p50, p95 or p99"},
		{"gpu:p99:2s", Objective{}, "want ttft, tpot, itl or e2e"},
		{"ttft:2s", Objective{}, "want METRIC:PERCENTILE:DURATION"},
		{"ttft:p99:-1s", Objective{}, "must not be negative"},
		{"ttft:p99:soon", Objective{}, "invalid duration"},
	}
	for _, tt := range tests {
		got, err := ParseObjective(tt.in, time.ParseDuration)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: error %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%q: %+v %v, want %+v", tt.in, got, err, tt.want)
		}
	}
}

// Goodput counts a request against the highest percentile's threshold of each metric, and a
// passing level may have (100 − pct)% failing each.
func TestSLORequestLimits(t *testing.T) {
	s := SLO{TTFTP50: time.Second, TTFTP99: 3 * time.Second, TPOTP95: 50 * time.Millisecond, ITLP99: time.Second}
	if got := s.requestLimits(); got != (requestSLO{ttft: 3e9, tpot: 5e7}) {
		t.Errorf("limits %+v", got)
	}
	if got := s.requestSlack(); got < 0.0599 || got > 0.0601 {
		t.Errorf("slack %g, want 0.06", got)
	}
}

func TestObjectiveLabel(t *testing.T) {
	for in, want := range map[string]string{"ttft_p99": "TTFT p99", "itl_p50": "ITL p50", "capacity": "capacity", "ttft_p90": "ttft_p90"} {
		if got := ObjectiveLabel(in); got != want {
			t.Errorf("ObjectiveLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// A result without slo.objectives (an older analysis.json) sets the p95 keys it has.
func TestAllObjectives(t *testing.T) {
	old := SLOResult{TTFTP95MS: 2000, TPOTP95MS: NaN(), E2EP95MS: 9000}
	got := old.AllObjectives()
	if len(got) != 2 || got[0].Name != "ttft_p95" || got[0].MaxMS != 2000 || got[1].Name != "e2e_p95" || got[1].Percentile != 95 {
		t.Errorf("p95 keys: %+v", got)
	}
	set := SLOResult{TTFTP95MS: 2000, Objectives: []SLOObjective{{Name: "itl_p50", Metric: "itl", Percentile: 50, MaxMS: 30}}}
	if got := set.AllObjectives(); len(got) != 1 || got[0].Name != "itl_p50" {
		t.Errorf("objectives: %+v", got)
	}
}
