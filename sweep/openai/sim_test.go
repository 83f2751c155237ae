package openai

import (
	"context"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
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
	for _, api := range []record.API{record.APIChat, record.APICompletions} {
		c := newClient(t, srv.URL, func(o *Options) { o.API = api; o.Model = sim.DefaultModel })
		var wg sync.WaitGroup
		recs := make([]record.Record, 8)
		for i := range recs {
			wg.Go(func() {
				c.Do(context.Background(), &record.Request{Prompt: "one two three four five", PromptTokens: 5,
					MaxTokens: 10, IgnoreEOS: true}, &recs[i])
			})
		}
		wg.Wait()
		for i, rec := range recs {
			if rec.Status != record.StatusOK {
				t.Fatalf("%s %d: %s %s %s", api, i, rec.Status, rec.ErrorClass, rec.Error)
			}
			if rec.OutputTokens != 10 || rec.TokensSource != record.TokensFromUsage || rec.PromptTokens != 5 {
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
		class record.ErrorClass
	}{
		{"error_rate", func(c *sim.Config) { c.Faults.ErrorRate = 1 }, record.ErrHTTP5xx},
		{"disconnect_rate", func(c *sim.Config) { c.Faults.DisconnectRate = 1 }, record.ErrStreamBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startSim(t, tt.mod)
			rec := do(t, newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel }), record.Request{Prompt: "a b", PromptTokens: 2, MaxTokens: 20, IgnoreEOS: true})
			if rec.Status != record.StatusError || rec.ErrorClass != tt.class {
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
	for i, lv := range analysis.Summarize(record.GroupRecords(runs, recs), analysis.DefaultOptions()) {
		want := 0
		for j := range recs {
			if r := &recs[j]; r.Level == runs[i].Index && r.Retried && record.SentInWindow(r, runs[i].W0, runs[i].W1) {
				want++
			}
		}
		if lv.Errors != 0 || lv.Retried != want {
			t.Errorf("level %d: %d errors, %d retried; want 0 and %d", lv.Concurrency, lv.Errors, lv.Retried, want)
		}
	}
	t.Logf("%d requests, %d retried on a fresh connection", len(recs), retried)
}

// TestSimulatorUsageLies is issue 12's acceptance test of usage plausibility: a simulator
// whose usage says completion_tokens 1e12 for streams of 8 true tokens (one a chunk) yields,
// through a real sweep and the analysis, a warning naming each level and a TPS from the
// chunks, not 1e13 tokens/s.
func TestSimulatorUsageLies(t *testing.T) {
	lie := int64(1e12)
	srv := startSim(t, func(c *sim.Config) {
		c.TTFT, c.ITL, c.Faults.UsageCompletionTokens = 2*time.Millisecond, 200*time.Microsecond, &lie
	})
	recs, runs := runSweepRuns(t, newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel }), []int{1, 2})
	for i := range recs {
		if r := &recs[i]; r.UsageOutputTokens != lie || r.TokensSource != record.TokensFromChunks {
			t.Fatalf("record %d: usage kept %d, source %s; want %d kept and chunks", i, r.UsageOutputTokens, r.TokensSource, lie)
		}
	}
	checkLyingLevels(t, recs, runs, 8)
}

// TestSimulatorUsageFaults drives the simulator's other usage faults through single
// requests of 10 tokens (5 words of prompt, the simulator's words tokenizer): each count
// that no server could send is kept beside the one from the stream or the request; a
// missing usage is no lie.
func TestSimulatorUsageFaults(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	tests := []struct {
		name              string
		faults            sim.Faults
		out, prompt       int
		usageOut, usagePr int64
		note              string
	}{
		{"completion 0", sim.Faults{UsageCompletionTokens: n(0)}, 10, 5, 0, 0, "completion_tokens 0 not believed"},
		{"completion negative", sim.Faults{UsageCompletionTokens: n(-4)}, 10, 5, -4, 0, "negative"},
		{"prompt 1e15", sim.Faults{UsagePromptTokens: n(1e15)}, 10, 5, 0, 1e15, "prompt_tokens 1000000000000000 not believed"},
		{"prompt 0", sim.Faults{UsagePromptTokens: n(0)}, 10, 5, 0, 0, "prompt_tokens 0 not believed"},
		{"omit usage", sim.Faults{OmitUsage: true}, 10, 5, 0, 0, ""},
		{"truth", sim.Faults{}, 10, 5, 0, 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startSim(t, func(c *sim.Config) { c.Faults = tt.faults })
			c := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
			rec := do(t, c, record.Request{Prompt: "one two three four five", PromptTokens: 5, MaxTokens: 10, IgnoreEOS: true})
			if rec.Status != record.StatusOK || rec.OutputTokens != tt.out || rec.PromptTokens != tt.prompt {
				t.Fatalf("%s %s: out %d prompt %d, want %d %d", rec.Status, rec.Error, rec.OutputTokens, rec.PromptTokens, tt.out, tt.prompt)
			}
			if rec.UsageOutputTokens != tt.usageOut || rec.UsagePromptTokens != tt.usagePr || !strings.Contains(rec.TokensNote, tt.note) || (tt.note == "") != (rec.TokensNote == "") {
				t.Errorf("kept %d/%d note %q; want %d/%d and a note containing %q", rec.UsageOutputTokens, rec.UsagePromptTokens, rec.TokensNote, tt.usageOut, tt.usagePr, tt.note)
			}
		})
	}
}

// TestSimulatorReasoning: the simulator streams the first reasoning_tokens = 5 of 10 output
// tokens as delta.reasoning_content. In fixed mode token i (from 0) is due TTFT + i·ITL after
// the request's start (sim/profile.go), so TTFT ≥ cfg.TTFT (reasoning counts) and TTFA, the
// first answer token, ≥ cfg.TTFT + 5·ITL; 5 reasoning chunks, usage's 5 reasoning tokens and
// N_out 10. Through a sweep, the level's TTFA p50 is at least cfg.TTFT + 5·ITL and above its
// TTFT p50, and the mean reasoning tokens are exactly 5.
func TestSimulatorReasoning(t *testing.T) {
	const ttft, itl = 2 * time.Millisecond, time.Millisecond
	srv := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.ReasoningTokens = ttft, itl, 5 })
	c := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	rec := do(t, c, record.Request{Prompt: "why", PromptTokens: 1, MaxTokens: 10, IgnoreEOS: true})
	if rec.Status != record.StatusOK || rec.OutputTokens != 10 || rec.ReasoningChunks != 5 || rec.ReasoningTokens != 5 || rec.TokensNote != "" {
		t.Fatalf("%s %s: out %d, reasoning chunks %d tokens %d, note %q; want 10 5 5 none", rec.Status, rec.Error,
			rec.OutputTokens, rec.ReasoningChunks, rec.ReasoningTokens, rec.TokensNote)
	}
	if rec.TTFT < ttft || rec.TTFA < ttft+5*itl || rec.TTFA <= rec.TTFT {
		t.Errorf("TTFT %v TTFA %v; want TTFT ≥ %v and TTFA ≥ %v", rec.TTFT, rec.TTFA, ttft, ttft+5*itl)
	}

	recs, runs := runSweepRuns(t, c, []int{1, 2})
	for _, lv := range analysis.Summarize(record.GroupRecords(runs, recs), analysis.DefaultOptions()) {
		floor := float64(ttft+5*itl) / 1e6 // ms
		if lv.MeanReasoningTokens != 5 || !(float64(lv.TTFA.P50) >= floor) || !(lv.TTFA.P50 > lv.TTFT.P50) {
			t.Errorf("level %d: mean reasoning tokens %v, TTFA p50 %v ms, TTFT p50 %v ms; want 5, TTFA ≥ %v ms and above TTFT",
				lv.Concurrency, lv.MeanReasoningTokens, lv.TTFA.P50, lv.TTFT.P50, floor)
		}
	}
}
