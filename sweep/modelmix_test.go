package sweep_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// TestPreflightModelMix: against a simulator serving its base model and the adapter
// sql-lora, a mix of both passes the preflight; a mix naming two models it does not serve is
// refused with both named and the served models listed.
func TestPreflightModelMix(t *testing.T) {
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, Adapters: []sim.Adapter{{Name: "sql-lora", Slowdown: 2}}})
	c := newClient(t, url, 2)
	ctx := context.Background()
	if _, err := server.RunPreflight(ctx, c, sim.DefaultModel, server.PreflightTimeout, sim.DefaultModel, "sql-lora"); err != nil {
		t.Fatalf("served mix: %v", err)
	}
	_, err := server.RunPreflight(ctx, c, sim.DefaultModel, server.PreflightTimeout, "sql-lora", "chat-lora", "code-lora")
	var ns *server.ModelNotServedError
	if !errors.As(err, &ns) {
		t.Fatalf("unserved mix: %v, want a ModelNotServedError", err)
	}
	want := `does not serve models "chat-lora", "code-lora"; it serves: "` + sim.DefaultModel + `", "sql-lora"`
	if ns.Model != "chat-lora" || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q (model %q), want %q", err, ns.Model, want)
	}
}

// TestModelMixRecords: a closed-loop and an arrival-rate sweep of a workload mixing the
// simulator's base model and its adapters over real loopback HTTP: every record keeps the
// model its request asked — the workload's draw for its (level, worker, seq), worker 0 on a
// rate level — and every model is served (no error); a rate level's arrivals recorded unsent
// (due when issuing stopped, the cap full) carry the model they would have asked, so that
// by_model adds up to the level.
func TestModelMixRecords(t *testing.T) {
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 2 * time.Millisecond, ITL: time.Millisecond,
		Adapters: []sim.Adapter{{Name: "sql-lora", Slowdown: 2}, {Name: "chat-lora"}}})
	cfg := workload.WorkloadConfig{InputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 8},
		OutputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 3}, FixedOutput: true, Seed: 9,
		Models: []workload.ModelWeight{{Name: sim.DefaultModel, Weight: 2}, {Name: "sql-lora", Weight: 1}, {Name: "chat-lora", Weight: 1}}}
	w, err := workload.NewWorkload(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	proto := sweep.Protocol{Warmup: 50 * time.Millisecond, WarmupMax: time.Second, Duration: 200 * time.Millisecond,
		MaxDuration: 200 * time.Millisecond, MinRequests: 1, CITarget: 0.5, DrainTimeout: 5 * time.Second}
	for _, plan := range []sweep.Plan{
		{Levels: []int{4}, Protocol: proto, Workload: w},
		{Rates: []float64{100}, Arrival: sweep.Arrival{Seed: 3}, Protocol: proto, Workload: w},
		// One slot at 1000 requests/s, more than the simulator's ≈ 180/s (3 ms + a token or
		// two of 1 ms, twice that for sql-lora): arrivals wait for the slot, and those due
		// when issuing stops are recorded unsent, with the model they would have asked.
		{Rates: []float64{1000}, Arrival: sweep.Arrival{Seed: 3}, MaxConcurrency: 1, Protocol: proto, Workload: w},
	} {
		sink := &memSink{}
		if _, err := sweep.Run(context.Background(), context.Background(), plan, newClient(t, url, 8), sink); err != nil {
			t.Fatal(err)
		}
		seen, unsent := map[string]int{}, 0
		for _, recs := range sink.records {
			for _, r := range recs {
				worker := r.Worker
				if len(plan.Rates) > 0 {
					worker = 0
				}
				if r.Worker < 0 && r.Status == record.StatusCancelled {
					unsent++
				} else if !r.OK() {
					t.Fatalf("rates %v: record (%d, %d, %d): %s %s", plan.Rates, r.Level, r.Worker, r.Seq, r.Status, r.Error)
				}
				if want := w.Next(r.Level, worker, r.Seq).Model; r.Model != want {
					t.Fatalf("rates %v: record (%d, %d, %d, %s): model %q, want %q", plan.Rates, r.Level, r.Worker, r.Seq, r.Status, r.Model, want)
				}
				seen[r.Model]++
			}
		}
		if len(seen) != 3 {
			t.Errorf("rates %v: models %v, want all three", plan.Rates, seen)
		}
		if plan.MaxConcurrency == 1 && unsent == 0 {
			t.Errorf("rates %v through one slot: no arrival recorded unsent", plan.Rates)
		}
	}
}
