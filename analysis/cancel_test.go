package analysis

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// cancelLevel is handLevel with its failure replaced by a user cancel sent at 14 s: 2 chunks
// of one token at 14.5 and 15 s, then the client closed the stream.
func cancelLevel() (record.LevelRun, []record.Record) {
	run, recs := handLevel()
	recs[3] = record.Record{Level: 0, Phase: record.PhaseMeasure, Sent: 14 * sec, TTFT: 500 * time.Millisecond,
		E2E: time.Second, Chunks: us(0.5, 1), PromptTokens: 300, OutputTokens: 2, TokensSource: record.TokensFromChunks,
		Status: record.StatusCancelled, ErrorClass: record.ErrUserCancel}
	return run, recs
}

// TestSummarizeUserCancel: a user cancel is no error (the error rate is 0, no class); it is
// one of the level's requests (cancelled 1 of 3); its 2 tokens count toward output TPS, its
// TTFT joins the TTFT population, and E2E and TPOT stay the ok requests'. The numbers are
// handLevel's (TestSummarizeHandMade) with the cancel's added.
func TestSummarizeUserCancel(t *testing.T) {
	run, recs := cancelLevel()
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if lv.Errors != 0 || lv.ErrorRate != 0 || len(lv.ErrorClasses) != 0 {
		t.Errorf("errors %d rate %v classes %v, want none", lv.Errors, lv.ErrorRate, lv.ErrorClasses)
	}
	if lv.Requests != 3 || lv.UserCancelled == nil || lv.UserCancelled.Count != 1 || math.Abs(float64(lv.UserCancelled.Share)-1.0/3) > 1e-12 {
		t.Fatalf("requests %d cancelled %+v, want 1 of 3", lv.Requests, lv.UserCancelled)
	}
	// Served: the ok ones' 6 and 4 tokens and the cancel's 2: a mean of 4.
	if lv.UserCancelled.MeanOutputTokens != 4 || lv.MeanOutputTokens != 5 {
		t.Errorf("mean output tokens served %v, completed %v: want 4 and 5", lv.UserCancelled.MeanOutputTokens, lv.MeanOutputTokens)
	}
	// Tokens in [10, 20) s: 6 (warmup record) + 6 + 1 + the cancel's 2 = 15, over 10 s.
	if got := float64(lv.OutputTPS); math.Abs(got-1.5) > 1e-9 {
		t.Errorf("output TPS %g, want 1.5", got)
	}
	// TTFT: 1000, 1000 and the cancel's 500 ms; E2E: the ok ones' 4000 ms only.
	if lv.TTFT.Mean != Float(2500.0/3) || lv.E2E.Mean != 4000 || lv.TPOT.Mean != 800 {
		t.Errorf("TTFT mean %v E2E mean %v TPOT mean %v, want 833.3, 4000, 800", lv.TTFT.Mean, lv.E2E.Mean, lv.TPOT.Mean)
	}
	// Little's law: departures in the window the completions at 11 and 16 s and the cancel
	// at 15 s: λ = 0.3/s; W the mean E2E of the population's ok and cancelled requests,
	// (4 + 4 + 1)/3 = 3 s; achieved concurrency (busy seconds 1 + 4 + 2 + 1)/10 = 0.8.
	if want := math.Abs(0.3*3-0.8) / 0.8; math.Abs(float64(lv.LittlesLawError)-want) > 1e-9 {
		t.Errorf("Little's-law error %v, want %g", lv.LittlesLawError, want)
	}

	// A level whose measured requests the users all left after a first token had answers.
	left := []record.Record{recs[3]}
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, left), DefaultOptions())[0]
	if strings.Contains(strings.Join(lv.Notes, "; "), "no successful request") {
		t.Errorf("a level of user cancels only: %q, want it not judged without answers", lv.Notes)
	}

	plain, precs := handLevel()
	if lv := Summarize(record.GroupRecords([]record.LevelRun{plain}, precs), DefaultOptions())[0]; lv.UserCancelled != nil {
		t.Errorf("a run without cancels has cancelled %+v, want it absent", lv.UserCancelled)
	}
}

// TestCancelsBeforeFirstToken: a user cancel before its first token has no TTFT, so the TTFT
// statistics leave it out; the level counts it (before_first_token), and with more than 5% of
// its TTFT population so (here 1 of 3) marks its TTFT percentiles as lower bounds, with a note
// and one run warning naming the level. A cancel after a first token marks nothing.
func TestCancelsBeforeFirstToken(t *testing.T) {
	run, recs := cancelLevel()
	recs[3].TTFT, recs[3].Chunks, recs[3].OutputTokens = 0, nil, 0
	res := Analyze(Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions()), Meta{}, DefaultOptions())
	lv := res.Levels[0]
	if c := lv.UserCancelled; c == nil || c.Count != 1 || c.BeforeFirstToken != 1 || !c.TTFTLowerBound {
		t.Fatalf("user cancelled %+v, want 1, before the first token, TTFT a lower bound", c)
	}
	if lv.TTFT.Mean != 1000 {
		t.Errorf("TTFT mean %v, want the ok requests' 1000 ms", lv.TTFT.Mean)
	}
	if !strings.Contains(strings.Join(lv.Notes, "; "), "TTFT percentiles are lower bounds: users cancelled 1 of the 3 requests") {
		t.Errorf("notes %q, want the TTFT lower-bound note", lv.Notes)
	}
	n := 0
	for _, w := range res.Warnings {
		if strings.Contains(w, "TTFT percentiles are lower bounds at concurrency 1 (1 of 3 requests) cancelled before a first token") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("warnings %q, want one naming concurrency 1", res.Warnings)
	}

	run, recs = cancelLevel()
	res = Analyze(Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions()), Meta{}, DefaultOptions())
	if c := res.Levels[0].UserCancelled; c == nil || c.BeforeFirstToken != 0 || c.TTFTLowerBound ||
		strings.Contains(strings.Join(res.Warnings, "\n"), "lower bounds") {
		t.Errorf("a cancel after its first token: %+v, warnings %q: want no lower bound", c, res.Warnings)
	}
}

// TestCancelsSlotsFreed: the run's statement reads each closed-loop level's largest running
// count against its concurrency (1 here) where the count could show an excess: below the
// server's slot limit or with none waiting. An excess of one is not evidence (one scrape's
// timing); a level at the limit with requests waiting is not judged, and the statement says
// why.
func TestCancelsSlotsFreed(t *testing.T) {
	run, recs := cancelLevel()
	limit8 := &record.ServerInfo{Engine: "kneecap-sim", Settings: map[string]string{"max_num_seqs": "8"}}
	limit1 := &record.ServerInfo{Engine: "kneecap-sim", Settings: map[string]string{"max_num_seqs": "1"}}
	for _, tc := range []struct {
		name    string
		server  *ServerEvidence
		info    *record.ServerInfo
		freed   *bool
		warning string
	}{
		{"freed", &ServerEvidence{MaxRunning: 1, MaxWaiting: 0}, nil, ptr(true), ""},
		{"one over", &ServerEvidence{MaxRunning: 2, MaxWaiting: 0}, nil, ptr(true), ""},
		{"kept running", &ServerEvidence{MaxRunning: 3, MaxWaiting: 0}, nil, ptr(false), "at concurrency 1 (max running 3) while users cancelled: it may keep generating"},
		{"below the limit, waiting", &ServerEvidence{MaxRunning: 3, MaxWaiting: 2}, limit8, ptr(false), "max running 3"},
		{"capped, limit unknown", &ServerEvidence{MaxRunning: 1, MaxWaiting: 2}, nil, nil, "at or above the server's slot limit"},
		{"at the limit", &ServerEvidence{MaxRunning: 1, MaxWaiting: 2}, limit1, nil, "at or above the server's slot limit"},
		{"waiting unknown", &ServerEvidence{MaxRunning: 1, MaxWaiting: NaN()}, nil, nil, "at or above the server's slot limit"},
		{"running not exposed", &ServerEvidence{MaxRunning: NaN(), MaxWaiting: NaN()}, nil, nil, "no running count was scraped"},
		// A level-summary CSV carries no server metrics: nothing to warn about.
		{"no server metrics", nil, nil, nil, ""},
	} {
		lvs := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())
		lvs[0].Server = tc.server
		res := Analyze(lvs, Meta{Server: tc.info}, DefaultOptions())
		c := res.Cancels
		if c == nil || c.UserCancelled != 1 || (c.SlotsFreed == nil) != (tc.freed == nil) ||
			(c.SlotsFreed != nil && *c.SlotsFreed != *tc.freed) {
			t.Errorf("%s: cancels %+v, want slots freed %v", tc.name, c, tc.freed)
			continue
		}
		warned := false
		for _, w := range res.Warnings {
			warned = warned || strings.HasPrefix(w, "user cancels: ")
		}
		if warned != (tc.warning != "") || tc.warning != "" && !strings.Contains(strings.Join(res.Warnings, "\n"), tc.warning) {
			t.Errorf("%s: warnings %q, want one saying %q", tc.name, res.Warnings, tc.warning)
		}
	}
}

func ptr[T any](v T) *T { return &v }
