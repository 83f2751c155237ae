package sweep_test

import (
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// TestRateRealizedWindow: a rate level's window extends slice by slice until the arrivals it
// holds realise the offered rate within record.MaxRealizedOff (DESIGN §3.9). Bursty arrivals
// (gamma of shape 0.2: a count over the 0.2 s minimum window strays by ±70%) at 100 requests/s
// against the fixed simulator, 3 levels: each window whose first 0.2 s realised a rate more
// than 5% off is longer than that, and each ends with its realised rate within 5% or at
// max_duration (1 s) with a note saying how far it was.
func TestRateRealizedWindow(t *testing.T) {
	url := fastSim(t)
	proto := sweep.Protocol{Warmup: 100 * time.Millisecond, WarmupMax: 10 * time.Second, Duration: 200 * time.Millisecond,
		MaxDuration: time.Second, MinRequests: 1, CITarget: 0.3, DrainTimeout: 10 * time.Second}
	rates := []float64{100, 101, 102}
	plan := sweep.Plan{Rates: rates, Arrival: sweep.Arrival{Process: sweep.ArrivalGamma, Burstiness: 0.2, Seed: 7},
		Protocol: proto, Workload: fixedWorkload{out: 4}}
	sink := &memSink{}
	if _, err := sweep.Run(t.Context(), t.Context(), plan, newClient(t, url, 64), sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.runs) != len(rates) {
		t.Fatalf("%d levels, want %d", len(sink.runs), len(rates))
	}
	// within reports whether [w0, w1) realised rps (record.RealizedWithin) and how far off it
	// was.
	within := func(recs []record.Record, w0, w1 int64, rps float64) (bool, float64) {
		n := 0
		for i := range recs {
			if record.ArrivedInWindow(&recs[i], w0, w1) {
				n++
			}
		}
		got, s := float64(n)/record.WindowSeconds(w0, w1), record.WindowSeconds(w0, w1)
		return record.RealizedWithin(got, rps, s), got/rps - 1
	}
	for i, run := range sink.runs {
		recs, rps := sink.records[i], rates[i]
		first := run.W0 + int64(proto.Duration)
		if ok, off := within(recs, run.W0, first, rps); !ok && run.W1 <= first {
			t.Errorf("level %d: the first %v realised %+.1f%% of the offered rate, yet the window ended there", i, proto.Duration, 100*off)
		}
		ok, off := within(recs, run.W0, run.W1, rps)
		t.Logf("level %d: window %v realised %+.1f%% of the offered rate, notes %q", i, time.Duration(run.W1-run.W0), 100*off, run.Notes)
		atMax := run.W1-run.W0 >= int64(proto.MaxDuration)-int64(proto.Duration)/record.MinSlices
		if !ok && !(atMax && hasNote(run, "the window reached max_duration")) {
			t.Errorf("level %d: window %v realised %+.1f%% of the offered rate, notes %q: want within 5%%, or max_duration and a note",
				i, time.Duration(run.W1-run.W0), 100*off, run.Notes)
		}
	}
}
