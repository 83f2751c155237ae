package sweep_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/sweep/openai"
)

// hostileServer serves every request with serve after reading it; its handlers end when the
// test does.
func hostileServer(t *testing.T, serve func(w http.ResponseWriter, done <-chan struct{})) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		done := make(chan struct{})
		go func() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			close(done)
		}()
		serve(w, done)
	}))
	t.Cleanup(func() { close(release); srv.CloseClientConnections(); srv.Close() })
	return srv.URL
}

// sseStart sends 200 and the event-stream headers.
func sseStart(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	w.(http.Flusher).Flush()
}

// contentEvent is one chat content chunk event.
const contentEvent = `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"z"}}]}` + "\n\n"

// budgetClient is a client of url whose own waits (ttft_timeout a minute) are far beyond the
// tests' answer budgets.
func budgetClient(t *testing.T, url string) *openai.Client {
	t.Helper()
	o := openai.DefaultOptions()
	o.BaseURL, o.Model, o.API = url, sim.DefaultModel, record.APIChat
	o.RequestTimeout, o.TTFTTimeout, o.MaxConns = time.Minute, time.Minute, 16
	c, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestAnswerBudgetEndsTheSweep runs a closed-loop sweep of levels 2 and 4 with an answer
// budget of 600 ms (its deadline at 540 ms) against servers that never stream a token — one
// silent, one that sends the headers and nothing more, one that drips a byte every 100 ms —
// with ttft_timeout a minute: the first level ends at the budget's deadline, the sweep stops
// as silent, and each worker's first request is recorded, class timeout, naming the budget
// and what had arrived. Before the budget, each waited out ttft_timeout.
func TestAnswerBudgetEndsTheSweep(t *testing.T) {
	const budget = 600 * time.Millisecond
	for _, c := range []struct {
		name, saw string
		serve     func(w http.ResponseWriter, done <-chan struct{})
	}{
		{"silent", "the server accepted the connection and sent nothing", func(w http.ResponseWriter, done <-chan struct{}) { <-done }},
		{"headers", "the response began and streamed no content", func(w http.ResponseWriter, done <-chan struct{}) {
			sseStart(w)
			<-done
		}},
		{"drip", "the response began and streamed no content", func(w http.ResponseWriter, done <-chan struct{}) {
			sseStart(w)
			tk := time.NewTicker(100 * time.Millisecond)
			defer tk.Stop()
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				case <-tk.C:
					w.Write([]byte{contentEvent[i%len(contentEvent)]})
					w.(http.Flusher).Flush()
				}
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := hostileServer(t, c.serve)
			start := time.Now()
			plan := sweep.Plan{Levels: []int{2, 4}, Protocol: shortProtocol(), Workload: fixedWorkload{out: 4},
				AnswerBudget: record.NewAnswerBudget(start, budget)}
			sink := &memSink{}
			out, err := sweep.Run(context.Background(), context.Background(), plan, budgetClient(t, url), sink)
			if err != nil {
				t.Fatal(err)
			}
			el := time.Since(start)
			if el < budget*9/10 || el > budget+2*time.Second {
				t.Errorf("the sweep took %v, want from the budget's deadline %v to the budget %v + 2 s", el, budget*9/10, budget)
			}
			if !out.Silent || !out.NeverAnswered || !strings.HasPrefix(out.StopReason, "no answer: at concurrency 2 ") || len(sink.runs) != 1 {
				t.Fatalf("silent %v, stop %q, %d levels: want the sweep stopped silent at its first level", out.Silent, out.StopReason, len(sink.runs))
			}
			firsts := 0
			for _, r := range sink.records[0] {
				if r.Seq != 0 {
					continue
				}
				firsts++
				if r.ErrorClass != record.ErrTimeout || !strings.Contains(r.Error, "target.answer_budget 600ms") || !strings.Contains(r.Error, c.saw) {
					t.Errorf("worker %d's first request: %q (%s), want timeout naming the budget and %q", r.Worker, r.ErrorClass, r.Error, c.saw)
				}
			}
			if firsts != 2 {
				t.Errorf("%d first requests recorded, want 2", firsts)
			}
		})
	}
}

// TestAnswerBudgetAnswered runs a level of 2 against the simulator with a budget of 2 s (its
// deadline at 1.8 s, far beyond the simulator's 5 ms TTFT on a busy machine) and a level that
// lasts 400 ms: a request answers it, so nothing is cut.
func TestAnswerBudgetAnswered(t *testing.T) {
	t.Parallel()
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, TTFT: 5 * time.Millisecond, ITL: time.Millisecond})
	b := record.NewAnswerBudget(time.Now(), 2*time.Second)
	proto := shortProtocol()
	proto.Warmup, proto.Duration, proto.MaxDuration = 100*time.Millisecond, 300*time.Millisecond, 300*time.Millisecond
	plan := sweep.Plan{Levels: []int{2}, Protocol: proto, Workload: fixedWorkload{out: 4}, AnswerBudget: b}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), context.Background(), plan, budgetClient(t, url), sink)
	if err != nil {
		t.Fatal(err)
	}
	if out.Silent || len(sink.runs) != 1 || !b.Answered() {
		t.Fatalf("silent %v, stop %q, %d levels, answered %v: want the level run, the budget answered", out.Silent, out.StopReason, len(sink.runs), b.Answered())
	}
	for i, recs := range sink.records {
		for _, r := range recs {
			if !r.OK() {
				t.Errorf("level %d: %s %q (%s)", i, r.Status, r.ErrorClass, r.Error)
			}
		}
	}
}

// TestAnswerBudgetErrorAnswers: a server that answers every request at once with an error —
// a 500, a stream of a bad chunk, a JSON body where a stream belongs, a redirect — has
// answered the budget: the first level is judged by the error-rate rule, which names the
// class, not ended at the budget's deadline as silent.
func TestAnswerBudgetErrorAnswers(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		serve func(w http.ResponseWriter, _ <-chan struct{})
	}{
		{"500", func(w http.ResponseWriter, _ <-chan struct{}) {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
		}},
		{"bad chunk", func(w http.ResponseWriter, _ <-chan struct{}) {
			sseStart(w)
			_, _ = w.Write([]byte(`data: {"choices":[{"delta":{"content":42}}]}` + "\n\n"))
		}},
		{"not a stream", func(w http.ResponseWriter, _ <-chan struct{}) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"choices":[{"message":{"content":"hi"}}]}`))
		}},
		{"redirect", func(w http.ResponseWriter, _ <-chan struct{}) {
			http.Redirect(w, &http.Request{Method: http.MethodPost}, "http://elsewhere.invalid/v1/chat/completions", http.StatusFound)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			url := hostileServer(t, c.serve)
			b := record.NewAnswerBudget(time.Now(), 600*time.Millisecond)
			proto := shortProtocol()
			proto.Warmup, proto.Duration, proto.MaxDuration = 100*time.Millisecond, 700*time.Millisecond, 700*time.Millisecond
			plan := sweep.Plan{Levels: []int{2}, Protocol: proto, Workload: fixedWorkload{out: 4}, AnswerBudget: b}
			out, err := sweep.Run(context.Background(), context.Background(), plan, budgetClient(t, url), &memSink{})
			if err != nil {
				t.Fatal(err)
			}
			if out.Silent || !b.Answered() || strings.HasPrefix(out.StopReason, sweep.StopSilent) {
				t.Errorf("silent %v, answered %v, stop %q: want the errors to answer the budget", out.Silent, b.Answered(), out.StopReason)
			}
		})
	}
}

// levelCount counts the levels started (sweep.Observer).
type levelCount struct{ started atomic.Int64 }

func (c *levelCount) LevelStarted(int, int)        { c.started.Add(1) }
func (c *levelCount) Live(sweep.LiveStats)         {}
func (c *levelCount) LevelFinished(l record.Level) {}

// firstLevelDown fails every request of the first level at once as the client's (no answer:
// record.Answers: too many open files), which the error-rate rule judges; later levels reach
// the server.
type firstLevelDown struct {
	record.Client
	levels *levelCount
}

// Do implements record.Client.
func (c firstLevelDown) Do(ctx context.Context, req *record.Request, rec *record.Record) {
	if c.levels.started.Load() > 1 {
		c.Client.Do(ctx, req, rec)
		return
	}
	rec.Status, rec.ErrorClass, rec.Error = record.StatusError, record.ErrClient, "too many open files"
	select { // no busy loop
	case <-ctx.Done():
	case <-time.After(5 * time.Millisecond):
	}
}

// TestAnswerBudgetFirstLevelOnly: a first level that ends unanswered before the budget's
// deadline (every request the client's failure: firstLevelDown) leaves the budget to no later
// level: the second level's requests, whose first token comes after the deadline, are not cut.
func TestAnswerBudgetFirstLevelOnly(t *testing.T) {
	t.Parallel()
	b := record.NewAnswerBudget(time.Now(), 800*time.Millisecond)
	levels := &levelCount{}
	url := hostileServer(t, func(w http.ResponseWriter, done <-chan struct{}) {
		sseStart(w)
		select {
		case <-done:
			return
		case <-time.After(time.Until(b.Deadline()) + 50*time.Millisecond):
		}
		w.Write([]byte(contentEvent + "data: [DONE]\n\n"))
	})
	proto := shortProtocol()
	proto.Warmup, proto.Duration, proto.MaxDuration = 50*time.Millisecond, 150*time.Millisecond, 150*time.Millisecond
	plan := sweep.Plan{Levels: []int{1, 2}, Protocol: proto, Workload: fixedWorkload{out: 1}, AnswerBudget: b, Observer: levels}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), context.Background(), plan, firstLevelDown{budgetClient(t, url), levels}, sink)
	if err != nil {
		t.Fatal(err)
	}
	if len(sink.records) != 2 || out.Silent {
		t.Fatalf("%d levels, silent %v, stop %q: want both levels run", len(sink.records), out.Silent, out.StopReason)
	}
	for _, r := range sink.records[1] {
		if strings.Contains(r.Error, "answer_budget") {
			t.Errorf("the second level's request was cut by the budget: %s", r.Error)
		}
	}
	if b.Answered() {
		t.Error("the second level answered the budget it does not carry")
	}
}

// TestOverlongStopsTheSweep runs levels 2 and 4 against a server that ignores max_tokens and
// streams content chunks without end: every worker's first request is cut after max_tokens
// chunks as overlong, the sweep stops at the first level saying so and what to do, and no
// overlong token counts.
func TestOverlongStopsTheSweep(t *testing.T) {
	t.Parallel()
	url := hostileServer(t, func(w http.ResponseWriter, done <-chan struct{}) {
		sseStart(w)
		for {
			select {
			case <-done:
				return
			default:
			}
			if _, err := io.WriteString(w, contentEvent); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	plan := sweep.Plan{Levels: []int{2, 4}, Protocol: shortProtocol(), Workload: fixedWorkload{out: 4}}
	sink := &memSink{}
	out, err := sweep.Run(context.Background(), context.Background(), plan, budgetClient(t, url), sink)
	if err != nil {
		t.Fatal(err)
	}
	want := "overlong streams: at concurrency 2 every worker's first request streamed past max_tokens"
	if !out.Overlong || !strings.HasPrefix(out.StopReason, want) || !strings.Contains(out.StopReason, "target.extra_body") || len(sink.runs) != 1 {
		t.Fatalf("overlong %v, stop %q, %d levels: want the sweep stopped at its first level, %q", out.Overlong, out.StopReason, len(sink.runs), want)
	}
	run := sink.runs[0]
	if run.Steady || !hasNote(run, "the server ignores max_tokens") {
		t.Errorf("level steady %v, notes %q: want not steady, noting that the server ignores max_tokens", run.Steady, run.Notes)
	}
	for _, r := range sink.records[0] {
		if r.ErrorClass != record.ErrOverlong && r.Status != record.StatusCancelled {
			t.Errorf("worker %d seq %d: %q (%s), want overlong", r.Worker, r.Seq, r.ErrorClass, r.Error)
		}
	}
	if tok := record.WindowOutputTokens(sink.records[0], run.WarmupStart, run.DrainEnd); tok != 0 {
		t.Errorf("%g overlong tokens counted, want 0", tok)
	}
}
