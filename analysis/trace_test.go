package analysis_test

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/record"
)

// TestTraceScaleAnswer reads the hand-made rate fixture (analysistest.Rate: levels 4 … 32
// requests/s, SLO point 20.6 between the passing 20 and the failing 22, capacity 20.84) as a
// trace replay of mean 4 requests/s, each level at time scale rate ÷ 4: slo_scale = 20.6 ÷ 4
// = 5.15, the largest measured scale meeting the SLO 20 ÷ 4 = 5, capacity_scale 20.84 ÷ 4 =
// 5.21; with no SLO the answer is the capacity's scale and the largest scale sustained at no
// more than it, again 5 (22 is sustained but above 20.84). Without a time scale or a trace,
// no trace answer.
func TestTraceScaleAnswer(t *testing.T) {
	fx := analysistest.Rate()
	levels := make([]analysis.Level, len(fx.Levels))
	for i, l := range fx.Levels {
		c := *l.RateLevel
		c.TimeScale = l.OfferedRPS / 4
		l.RateLevel = &c
		levels[i] = l
	}
	meta := fx.Meta
	meta.Trace = &record.TraceInfo{File: "t.jsonl", Format: record.TraceMooncake, Requests: 240, DurationS: 60, MeanRPS: 4}
	opts := analysis.DefaultOptions()
	opts.SLO = analysis.SLO{TTFTP95: 500 * time.Millisecond, TPOTP95: 50 * time.Millisecond}
	tr := analysis.Analyze(levels, meta, opts).Trace
	if tr == nil {
		t.Fatal("no trace answer")
	}
	near := func(got analysis.Float, want float64) bool { return math.Abs(float64(got)-want) < 0.01 }
	if tr.Basis != "slo" || !near(tr.SLOScale, 5.15) || tr.LargestScaleMeetingSLO != 5 || !near(tr.CapacityScale, 5.21) || tr.MeanRPS != 4 || len(tr.Scales) != 9 {
		t.Errorf("trace %+v: want basis slo, slo_scale 5.15, largest 5, capacity_scale 5.21, mean 4, 9 scales", tr)
	}
	if want := "This replica carries 5.15× the recorded traffic of trace t.jsonl at the SLO (20.6 requests/s; largest measured scale meeting it: 5×)."; tr.Answer != want {
		t.Errorf("answer %q\nwant   %q", tr.Answer, want)
	}
	// A loose SLO that 22 requests/s (scale 5.5, sustained) meets and 26 (not sustained)
	// fails: slo_rps is held at the capacity, 20.84, below 22; the largest measured scale
	// meeting the SLO is still 5.5, the last passing level's (review finding 4).
	opts.SLO = analysis.SLO{TTFTP95: 30 * time.Second, TPOTP95: 10 * time.Second}
	tr = analysis.Analyze(levels, meta, opts).Trace
	if tr == nil || tr.Basis != "slo" || !near(tr.SLOScale, 5.21) || tr.LargestScaleMeetingSLO != 5.5 {
		t.Errorf("loose SLO: trace %+v: want slo_scale 5.21 (the capacity's) and largest 5.5", tr)
	}
	opts.SLO = analysis.SLO{}
	meta.Trace = nil // the mean from a level: offered ÷ time scale
	tr = analysis.Analyze(levels, meta, opts).Trace
	if tr == nil || tr.Basis != "capacity" || tr.LargestScaleMeetingSLO != 5 || !near(tr.CapacityScale, 5.21) || !strings.HasPrefix(tr.Answer, "No SLO is set, so by its capacity: this replica sustains 5.21×") {
		t.Errorf("no SLO: trace %+v: want basis capacity, largest 5, capacity_scale 5.21", tr)
	}
	// Every scale up to 5.5 sustained (22 requests/s, which completed 20.4): the capacity is
	// at least 20.4, the largest completion rate, and the largest scale sustained is 5.5, not
	// the 5 below that bound.
	var sustained []analysis.Level
	for _, l := range levels {
		if l.Sustainable {
			sustained = append(sustained, l)
		}
	}
	res := analysis.Analyze(sustained, meta, opts)
	if tr := res.Trace; tr == nil || res.Rate.CapacityBound != "at_least" || tr.LargestScaleMeetingSLO != 5.5 || !near(tr.CapacityScale, 20.4/4) ||
		!strings.Contains(tr.Answer, "sustains at least 5.09×") {
		t.Errorf("every scale sustained: bound %q, trace %+v: want at_least, largest 5.5, capacity_scale 5.1", res.Rate.CapacityBound, tr)
	}
	if tr := analysis.Analyze(fx.Levels, fx.Meta, opts).Trace; tr != nil {
		t.Errorf("a rate run without a trace has a trace answer %+v", tr)
	}
}
