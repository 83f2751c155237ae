package openai

// The fault suite of DESIGN §7: every misbehaviour of a server that kneecap has met or can
// imagine, played by the hostile loopback server (hostile_test.go) against the real
// go-openai client. docs/reliability.md tabulates these tests; keep the two in step.

import (
	"bytes"
	"context"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/report"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// faultTimeout is the request_timeout of the fault suite: the hang cases each cost one.
const faultTimeout = 700 * time.Millisecond

// timeoutSlack is how far past request_timeout a request may end: the cancellation has to
// reach the reading goroutine and the connection has to close. Generous for -race on a busy
// 2-core machine (about twenty subtests run at once); a hang is 5×–∞ beyond it.
const timeoutSlack = 1500 * time.Millisecond

// faultClass is the error class DESIGN §7 assigns to each fault ("" for success).
var faultClass = map[fault]record.ErrorClass{
	faultNone:        "",
	fault401:         record.ErrHTTP4xx,
	fault404Model:    record.ErrHTTP4xx,
	fault429:         record.ErrHTTP429,
	fault500:         record.ErrHTTP5xx,
	fault503:         record.ErrHTTP5xx,
	faultHTML502:     record.ErrHTTP5xx,
	faultDisconnect:  record.ErrStreamBroken,
	faultBadJSON:     record.ErrBadChunk,
	faultStreamError: record.ErrHTTP5xx, // the error object's code is 500
	faultHugeLine:    record.ErrBadChunk,
	faultEndless:     record.ErrOverlong, // past max_tokens content chunks
	faultSilent:      record.ErrTimeout,
	faultTrickle:     record.ErrTimeout,
	faultEmpty:       record.ErrEmpty,
	faultNoDone:      record.ErrStreamBroken,
	faultKeepAlive:   record.ErrBadChunk,
	faultNoToken:     record.ErrTimeout,
	faultStall:       record.ErrTimeout,
	faultDoneOpen:    "", // ends at [DONE] (TestFaultDoneWithoutClose)

	faultRedirect301:     record.ErrRedirect,
	faultRedirect302:     record.ErrRedirect,
	faultRedirect303:     record.ErrRedirect,
	faultRedirect307:     record.ErrRedirect,
	faultRedirect308:     record.ErrRedirect,
	faultRedirect301Same: record.ErrRedirect, // would turn the POST into a GET
	faultRedirect302Same: record.ErrRedirect,
	faultRedirect303Same: record.ErrRedirect,
	faultRedirect307Same: "", // followed with its method and body
	faultRedirect308Same: "",
}

var designClasses = []record.ErrorClass{record.ErrConnect, record.ErrTimeout, record.ErrHTTP4xx, record.ErrHTTP429,
	record.ErrHTTP5xx, record.ErrStreamBroken, record.ErrBadChunk, record.ErrEmpty, record.ErrRedirect, record.ErrOverlong}

// checkFailure asserts the invariants of every failed record: an error status, a DESIGN §7
// class, a one-line bounded message, and an end no later than request_timeout + slack.
func checkFailure(t *testing.T, rec *record.Record, class record.ErrorClass) {
	t.Helper()
	if rec.Status != record.StatusError || rec.ErrorClass != class {
		t.Errorf("status %s class %q (%s), want error %q", rec.Status, rec.ErrorClass, rec.Error, class)
	}
	if !slices.Contains(designClasses, rec.ErrorClass) {
		t.Errorf("class %q is not one of DESIGN §7's %v", rec.ErrorClass, designClasses)
	}
	if rec.Error == "" || strings.Contains(rec.Error, "\n") || len(rec.Error) > maxErrorLen+8 {
		t.Errorf("error message should be one line of ≤ %d bytes: %q", maxErrorLen, rec.Error)
	}
	if rec.E2E > faultTimeout+timeoutSlack {
		t.Errorf("request took %v, past request_timeout %v (+%v slack)", rec.E2E, faultTimeout, timeoutSlack)
	}
}

// TestFaultEachRequest plays every fault against one request and checks its class, its
// message and that nothing waits past request_timeout. The subtests run in parallel so the
// five hang cases cost one timeout together.
func TestFaultEachRequest(t *testing.T) {
	type tc struct {
		name  string
		url   func(t testing.TB) string
		class record.ErrorClass
	}
	var cases []tc
	for f, class := range faultClass {
		if class == "" {
			continue // not a failure: faultNone, and those with tests of their own
		}
		cases = append(cases, tc{string(f), func(t testing.TB) string {
			_, srv := startHostile(t, func(int64) fault { return f })
			return srv.URL
		}, class})
	}
	cases = append(cases,
		tc{"connection refused", closedPort, record.ErrConnect},
		tc{"TLS to a plain-HTTP port", func(t testing.TB) string {
			_, srv := startHostile(t, func(int64) fault { return faultNone })
			return "https://" + strings.TrimPrefix(srv.URL, "http://")
		}, record.ErrConnect},
		tc{"accepts the connection and never answers", silentListener, record.ErrTimeout},
	)
	slices.SortFunc(cases, func(a, b tc) int { return strings.Compare(a.name, b.name) })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cl := newClient(t, c.url(t), func(o *Options) { o.RequestTimeout, o.Model = faultTimeout, sim.DefaultModel })
			start := time.Now()
			rec := do(t, cl, record.Request{Prompt: "x y", PromptTokens: 2, MaxTokens: 8, IgnoreEOS: true})
			if el := time.Since(start); el > faultTimeout+timeoutSlack {
				t.Errorf("Do returned after %v, past request_timeout %v (+%v slack)", el, faultTimeout, timeoutSlack)
			}
			checkFailure(t, &rec, c.class)
		})
	}
}

// TestFaultHugeLineMemoryBounded sends a 10 MiB line to 4 concurrent requests and checks
// that the client fails them as bad_chunk without buffering the lines: the bytes allocated
// by the whole process (client, and the server writing from one shared block) stay under half
// of 4 × 10 MiB. The cap is Options.MaxLineBytes (1 MiB by default; about 2 MiB is allocated
// per request as the event reader's buffer doubles up to it); buffering the line would
// allocate ≥ 10 MiB per request.
func TestFaultHugeLineMemoryBounded(t *testing.T) {
	const conc = 4
	_, srv := startHostile(t, func(int64) fault { return faultHugeLine })
	cl := newClient(t, srv.URL, func(o *Options) { o.RequestTimeout = 10 * time.Second })
	// Warm the connection pool and the server so the measurement sees only the streams.
	do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 2})

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	recs := make([]record.Record, conc)
	var wg sync.WaitGroup
	for i := range recs {
		wg.Go(func() {
			req := record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 2}
			cl.Do(context.Background(), &req, &recs[i])
		})
	}
	wg.Wait()
	runtime.ReadMemStats(&after)
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d × 10 MiB lines: %.1f MiB allocated in total", conc, float64(alloc)/(1<<20))
	if limit := uint64(conc * hugeLine / 2); alloc > limit {
		t.Errorf("allocated %d bytes for %d hostile streams, want < %d (lines must not be buffered)", alloc, conc, limit)
	}
	for i := range recs {
		if recs[i].Status != record.StatusError || recs[i].ErrorClass != record.ErrBadChunk {
			t.Errorf("request %d: %s %q (%s), want bad_chunk", i, recs[i].Status, recs[i].ErrorClass, recs[i].Error)
		}
	}
}

// faultCycle is the order in which the sweep test's server plays faults: every other
// request succeeds, so each level sees every fault and real measurements between them.
var faultCycle = []fault{
	fault401, fault404Model, fault429, fault500, fault503, faultHTML502, faultDisconnect,
	faultBadJSON, faultStreamError, faultEmpty, faultNoDone, faultKeepAlive, faultHugeLine,
	faultSilent, faultEndless, faultTrickle, faultDoneOpen,
	faultRedirect301, faultRedirect302, faultRedirect303, faultRedirect307, faultRedirect308,
	faultRedirect301Same, faultRedirect302Same, faultRedirect303Same, faultRedirect307Same, faultRedirect308Same,
}

func cyclePick(n int64) fault {
	if n%2 == 0 {
		return faultNone
	}
	return faultCycle[(n/2)%int64(len(faultCycle))]
}

// memSink keeps a sweep's levels in memory.
type memSink struct {
	mu     sync.Mutex
	runs   []record.LevelRun
	recs   []record.Record
	reason string
}

func (s *memSink) LevelDone(l record.Level) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.runs = append(s.runs, l.Run)
	s.recs = append(s.recs, l.Records...)
	return nil
}

func (s *memSink) Finish(reason string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reason = reason
	return nil
}

// TestFaultSweepKeepsRunning drives a real two-level sweep (sweep.Run, the real client)
// against a server that fails every other request with one fault after another. The sweep
// must run both levels to the end; every request must become exactly one record whose class
// is the fault's (the server's own count of what it played is the reference); the analysis
// must count the classes per level (error_classes) and the report must print them.
func TestFaultSweepKeepsRunning(t *testing.T) {
	h, srv := startHostile(t, cyclePick)
	cl := newClient(t, srv.URL, func(o *Options) { o.RequestTimeout, o.Model = faultTimeout, sim.DefaultModel })
	wl, err := workload.NewWorkload(workload.WorkloadConfig{
		InputTokens:  workload.Dist{Dist: workload.DistFixed, Mean: 8},
		OutputTokens: workload.Dist{Dist: workload.DistFixed, Mean: 8},
		FixedOutput:  true,
		Seed:         1,
	}, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	plan := sweep.Plan{
		Levels: []int{4, 8}, // enough workers to play every fault while failures back off
		Protocol: sweep.Protocol{
			Warmup:       50 * time.Millisecond,
			WarmupMax:    5 * time.Second,
			Duration:     time.Second,
			MaxDuration:  time.Second,
			CITarget:     0.5,
			DrainTimeout: 5 * time.Second, // > request_timeout: nothing is cancelled
		},
		Workload: wl,
	}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), nil, plan, cl, sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.StopReason != sweep.StopDone || len(sink.runs) != 2 {
		t.Fatalf("sweep stopped after %d levels: %q, want both levels and %q", len(sink.runs), out.StopReason, sweep.StopDone)
	}

	// Every request is one record, with the class of the fault the server played.
	played := h.counts()
	want := map[record.ErrorClass]int{}
	total := 0
	for f, n := range played {
		want[faultClass[f]] += n
		total += n
	}
	got := map[record.ErrorClass]int{}
	for i := range sink.recs {
		r := &sink.recs[i]
		if r.OK() {
			got[""]++
			continue
		}
		got[r.ErrorClass]++
		checkFailure(t, r, r.ErrorClass)
	}
	t.Logf("%d requests served", total)
	if len(sink.recs) != total {
		t.Errorf("%d records for %d requests served", len(sink.recs), total)
	}
	for class, n := range want {
		if got[class] != n {
			t.Errorf("class %q: %d records, server played %d such faults (played %v)", class, got[class], n, played)
		}
	}
	for _, f := range faultCycle {
		if played[f] == 0 {
			t.Errorf("fault %s never played: the levels were too short to test it", f)
		}
	}
	if got[""] == 0 {
		t.Error("no successful requests between the faults")
	}

	// The analysis counts the classes of the requests sent in each window, and the report
	// prints them.
	levels := analysis.Summarize(record.GroupRecords(sink.runs, sink.recs), analysis.DefaultOptions())
	if len(levels) != 2 {
		t.Fatalf("%d analysis levels, want 2", len(levels))
	}
	for i, lv := range levels {
		run := sink.runs[i]
		wantLv := map[string]int{}
		errs := 0
		for _, r := range sink.recs {
			if r.Level == run.Index && !r.OK() && r.Sent >= run.W0 && r.Sent < run.W1 {
				wantLv[string(r.ErrorClass)]++
				errs++
			}
		}
		if lv.Errors != errs || len(lv.ErrorClasses) != len(wantLv) {
			t.Errorf("level %d: %d errors %v, want %d %v", lv.Concurrency, lv.Errors, lv.ErrorClasses, errs, wantLv)
		}
		for c, n := range wantLv {
			if lv.ErrorClasses[c] != n {
				t.Errorf("level %d: error_classes[%s] = %d, want %d", lv.Concurrency, c, lv.ErrorClasses[c], n)
			}
		}
		if !(float64(lv.ErrorRate) > 0.3) {
			t.Errorf("level %d: error rate %v, want about half", lv.Concurrency, lv.ErrorRate)
		}
	}
	res := analysis.Analyze(levels, analysis.Meta{Name: "faults"}, analysis.DefaultOptions())
	var md bytes.Buffer
	if err := report.Markdown(&md, &res, nil); err != nil {
		t.Fatal(err)
	}
	for class, n := range levels[1].ErrorClasses {
		// Markdown escapes the underscore.
		if !strings.Contains(md.String(), class) && !strings.Contains(md.String(), strings.ReplaceAll(class, "_", `\_`)) {
			t.Errorf("report.md does not mention error class %s (%d at concurrency 4)", class, n)
		}
	}
}
