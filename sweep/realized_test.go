package sweep

import (
	"math"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestArrivalCount: the controller's replay of a rate level's schedule counts exactly the
// arrivals a fresh generator of the same gaps puts in [w0, t), for t growing slice by slice
// (Poisson and bursty gamma arrivals at 50 requests/s over 4 s).
func TestArrivalCount(t *testing.T) {
	base := time.Unix(1_000_000, 0)
	for _, a := range []Arrival{{Seed: 3}, {Process: ArrivalGamma, Burstiness: 0.2, Seed: 5}} {
		l := &level{index: 2, clk: unixClock{base: base}, begun: base}
		l.initSchedule(a, 50)
		w0 := base.UnixNano() + int64(700*time.Millisecond)
		c := l.newArrivalCount(w0)
		var due []int64 // the reference: every arrival of the first 5 s
		next, at := a.Gaps(50, 2), base.UnixNano()
		for at < base.UnixNano()+int64(5*time.Second) {
			at += int64(next())
			due = append(due, at)
		}
		for t1 := w0; t1 <= w0+int64(4*time.Second); t1 += int64(37 * time.Millisecond) {
			want := 0
			for _, d := range due {
				if d >= w0 && d < t1 {
					want++
				}
			}
			if got := c.below(t1); got != want {
				t.Fatalf("%s: %d arrivals counted in [w0, w0 + %v), the schedule has %d", a.process(), got, time.Duration(t1-w0), want)
			}
		}
	}
}

// TestRealizedWithin: 5% of the offered count, or one arrival where that is wider.
func TestRealizedWithin(t *testing.T) {
	for _, c := range []struct {
		arrivals, rps, window float64
		want                  bool
	}{
		{52, 5.5, 10, false},  // 55 offered: 3 short, 5.5%
		{53, 5.5, 10, true},   // 2 short, 3.6%
		{58, 5.5, 10, false},  // 3 over
		{6, 0.555, 10, true},  // 5.55 offered: within one arrival, 8%
		{4, 0.555, 10, false}, // 1.55 short
	} {
		if got := record.RealizedWithin(c.arrivals/c.window, c.rps, c.window); got != c.want {
			t.Errorf("%v arrivals in %v s at %v requests/s: within %v, want %v", c.arrivals, c.window, c.rps, got, c.want)
		}
	}
	if record.RealizedWithin(0.94, 1, math.Inf(1)) || !record.RealizedWithin(0.96, 1, math.Inf(1)) {
		t.Error("a window of unknown length is held to 5%")
	}
}
