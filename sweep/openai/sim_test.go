package openai

import (
	"context"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// startSim serves the simulator in fixed mode (TTFT, then one chunk every ITL) over loopback.
func startSim(t *testing.T, mod func(*sim.Config)) *httptest.Server {
	t.Helper()
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT = 20 * time.Millisecond
	cfg.ITL = 2 * time.Millisecond
	cfg.TokensPerChunk = 1
	if mod != nil {
		mod(&cfg)
	}
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(func() { srv.Close(); s.Close() })
	return srv
}

// TestSimulatorBothAPIs checks the adapter against the simulator's fixed mode, where the
// ground truth is TTFT ≥ cfg.TTFT and E2E ≥ cfg.TTFT + (N−1)·ITL (sim/profile.go; tokens are
// scheduled from the request's start, so a late first token does not delay the last).
func TestSimulatorBothAPIs(t *testing.T) {
	srv := startSim(t, nil)
	for _, api := range []sweep.API{sweep.APIChat, sweep.APICompletions} {
		c := newClient(t, srv.URL, func(o *Options) { o.API = api; o.Model = sim.DefaultModel })
		var wg sync.WaitGroup
		recs := make([]sweep.Record, 8)
		for i := range recs {
			wg.Go(func() {
				c.Do(context.Background(), &sweep.Request{Prompt: "one two three four five", PromptTokens: 5,
					MaxTokens: 10, IgnoreEOS: true}, &recs[i])
			})
		}
		wg.Wait()
		for i, rec := range recs {
			if rec.Status != sweep.StatusOK {
				t.Fatalf("%s %d: %s %s %s", api, i, rec.Status, rec.ErrorClass, rec.Error)
			}
			if rec.OutputTokens != 10 || rec.TokensSource != sweep.TokensFromUsage || rec.PromptTokens != 5 {
				t.Errorf("%s: out %d (%s) prompt %d, want 10 usage 5", api, rec.OutputTokens, rec.TokensSource, rec.PromptTokens)
			}
			if len(rec.Chunks) != 10 || !slices.IsSorted(rec.Chunks) {
				t.Errorf("%s: %d chunks %v", api, len(rec.Chunks), rec.Chunks)
			}
			if rec.TTFT < 20*time.Millisecond || rec.E2E < 20*time.Millisecond+9*2*time.Millisecond {
				t.Errorf("%s: TTFT %v E2E %v below the simulator's floor", api, rec.TTFT, rec.E2E)
			}
		}
		ids, err := c.Models(context.Background())
		if err != nil || !slices.Contains(ids, sim.DefaultModel) {
			t.Errorf("models %v %v", ids, err)
		}
	}
}

func TestSimulatorFaults(t *testing.T) {
	tests := []struct {
		name  string
		mod   func(*sim.Config)
		class sweep.ErrorClass
	}{
		{"error_rate", func(c *sim.Config) { c.Faults.ErrorRate = 1 }, sweep.ErrHTTP5xx},
		{"disconnect_rate", func(c *sim.Config) { c.Faults.DisconnectRate = 1 }, sweep.ErrStreamBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startSim(t, tt.mod)
			rec := do(t, newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel }), sweep.Request{Prompt: "a b", PromptTokens: 2, MaxTokens: 20, IgnoreEOS: true})
			if rec.Status != sweep.StatusError || rec.ErrorClass != tt.class {
				t.Fatalf("%s %q (%s), want %s", rec.Status, rec.ErrorClass, rec.Error, tt.class)
			}
		})
	}
}

// TestSimulatorCloseAfterStreamSweep is issue 12's acceptance test of the retry: against the
// simulator's close_after_stream mode (llama.cpp's llama-server: keep-alive advertised, the
// connection closed after every stream), a sweep at concurrency 1, 2, 4 and 8 has no error;
// each request that met a closed pooled connection was retried on a fresh one. The
// simulator's stream of MaxTokens tokens is the ground truth of every record's N_out.
func TestSimulatorCloseAfterStreamSweep(t *testing.T) {
	srv := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL, c.CloseAfterStream = 2*time.Millisecond, 200*time.Microsecond, true
	})
	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	recs, runs := runSweepRuns(t, cl, []int{1, 2, 4, 8})
	retried := 0
	for i := range recs {
		r := &recs[i]
		if !r.OK() || r.OutputTokens != 8 {
			t.Errorf("level %d worker %d seq %d: %s %s (N_out %d): %s", r.Concurrency, r.Worker, r.Seq, r.Status, r.ErrorClass, r.OutputTokens, r.Error)
		}
		if r.Retried {
			retried++
		}
	}
	// The analysis counts the retried requests sent in each window, none as an error.
	for i, lv := range analysis.Summarize(sweep.GroupRecords(runs, recs), analysis.DefaultOptions()) {
		want := 0
		for j := range recs {
			if r := &recs[j]; r.Level == runs[i].Index && r.Retried && sweep.SentInWindow(r, runs[i].W0, runs[i].W1) {
				want++
			}
		}
		if lv.Errors != 0 || lv.Retried != want {
			t.Errorf("level %d: %d errors, %d retried; want 0 and %d", lv.Concurrency, lv.Errors, lv.Retried, want)
		}
	}
	t.Logf("%d requests, %d retried on a fresh connection", len(recs), retried)
}
