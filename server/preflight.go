package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// PreflightTimeout bounds the preflight (DESIGN §3): GET /v1/models and one probe request.
const PreflightTimeout = 10 * time.Second

// Preflight is what the preflight learned of an endpoint that answered.
type Preflight struct {
	// TTFT is the probe request's time to first token.
	TTFT time.Duration
	// E2E is the probe's end-to-end time and OutputTokens its N_out (it asks for 2).
	E2E          time.Duration
	OutputTokens int
	// ModelsErr is the error of GET /v1/models when it failed but the probe worked (a
	// warning: some servers do not list models).
	ModelsErr error
}

// ModelNotServedError is the preflight's answer for an endpoint whose GET /v1/models lists
// other models than the ones configured (a configuration error).
type ModelNotServedError struct {
	// Model is the first model configured that is not served, Missing every one (Model
	// first), Served what the endpoint lists.
	Model   string
	Missing []string
	Served  []string
}

func (e *ModelNotServedError) Error() string {
	if len(e.Missing) > 1 {
		return fmt.Sprintf("does not serve models %s; it serves: %s", Quoted(e.Missing), servedList(e.Served))
	}
	return fmt.Sprintf("does not serve model %q; it serves: %s", e.Model, servedList(e.Served))
}

// Quoted joins names, each quoted (a model name may hold spaces and commas), with commas.
func Quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// maxServedListed bounds the served models an error lists.
const maxServedListed = 20

// servedList lists the model IDs a server's GET /v1/models gave for a console line: each
// clipped (clip) and quoted, at most maxServedListed of them and how many more, so that what
// a server sends cannot move the terminal's cursor or fill the screen.
func servedList(served []string) string {
	n := min(len(served), maxServedListed)
	q := make([]string, n)
	for i, m := range served[:n] {
		q[i] = clip(m)
	}
	out := Quoted(q)
	if more := len(served) - n; more > 0 {
		out += fmt.Sprintf(" and %d more", more)
	}
	return out
}

// UnreachableError is the preflight's answer for an endpoint that did not answer the probe
// request, or answered it with a failure: Cause says why, on one line.
type UnreachableError struct {
	Cause string
	// Hung reports a server that listed every model configured and took the probe but gave
	// no complete answer in time (a timeout, or the preflight's own bound) or streamed past
	// its max_tokens (overlong): one a sweep can measure and record (DESIGN §3.1).
	Hung bool
	// Waited reports that the preflight's own bound ran out (timeout, or ctx's deadline).
	Waited bool
	// Silence, when Waited, says what the request cut by the bound got from a server that
	// accepted its connection (preflighthang.go); "" when none accepted it.
	Silence string
	// Class is the probe request's error class ("" when it was not sent).
	Class record.ErrorClass
}

func (e *UnreachableError) Error() string { return e.Cause }

// RunPreflight checks the endpoint behind client before the sweep, within timeout: GET
// /v1/models must list model and each of mix (the models of workload.models) when the server
// answers it, and one tiny streaming request must succeed. It returns a *ModelNotServedError
// or an *UnreachableError, so that a bad endpoint is one clear line within seconds, not a
// sweep full of errors.
func RunPreflight(ctx context.Context, client record.Client, model string, timeout time.Duration, mix ...string) (Preflight, error) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var mh, ph heard // what GET /models and the probe got (preflighthang.go)
	models, merr := client.Models(mh.traced(pctx))
	if merr == nil && len(models) > 0 {
		var missing []string
		for _, m := range append([]string{model}, mix...) {
			if !slices.Contains(models, m) && !slices.Contains(missing, m) {
				missing = append(missing, m)
			}
		}
		if len(missing) > 0 {
			return Preflight{}, &ModelNotServedError{Model: missing[0], Missing: missing, Served: models}
		}
	}
	if merr != nil && pctx.Err() != nil {
		e := &UnreachableError{Cause: fmt.Sprintf("no answer within %s (%v)", timeout, merr), Waited: true}
		if s := mh.silence("GET /models", timeout, 0); s != "" && !errors.Is(ctx.Err(), context.Canceled) {
			e.Silence = s + " (the completion probe was not sent)"
		}
		return Preflight{}, e
	}
	req := record.Request{Prompt: "Reply with one word: ok", PromptTokens: 6, MaxTokens: 2}
	var rec record.Record
	client.Do(ph.traced(pctx), &req, &rec)
	if !rec.OK() {
		cause := rec.Error
		if cause == "" {
			cause = string(rec.Status)
		}
		if rec.Status == record.StatusCancelled && pctx.Err() != nil && ctx.Err() == nil {
			cause = fmt.Sprintf("no complete answer within %s", timeout)
		}
		if merr != nil && rec.ErrorClass != record.ErrConnect && rec.ErrorClass != record.ErrTimeout && rec.ErrorClass != record.ErrRedirect {
			cause += fmt.Sprintf(" (and GET /models: %v)", merr)
		}
		if rec.ErrorClass != "" {
			cause = string(rec.ErrorClass) + ": " + cause
		}
		// Cut by timeout's bound or ctx's deadline (the answer budget), not an interrupt.
		waited := rec.Status == record.StatusCancelled && pctx.Err() != nil && !errors.Is(ctx.Err(), context.Canceled)
		hung := waited || rec.ErrorClass == record.ErrTimeout || rec.ErrorClass == record.ErrOverlong
		e := &UnreachableError{Cause: strings.ReplaceAll(cause, "\n", " "),
			Hung: hung && merr == nil && len(models) > 0, Waited: waited, Class: rec.ErrorClass}
		if waited {
			e.Silence = ph.silence("the completion probe", timeout, rec.OutputTokens)
		}
		return Preflight{}, e
	}
	return Preflight{TTFT: rec.TTFT, E2E: rec.E2E, OutputTokens: rec.OutputTokens, ModelsErr: merr}, nil
}

// RequestE2E estimates from the probe the E2E of one request of outputTokens tokens alone on
// the server: the probe's TTFT plus outputTokens − 1 times its time per output token, (E2E −
// TTFT) ÷ (N_out − 1); the probe's E2E when it had a single token or outputTokens is unknown
// (≤ 1). A lower bound: the probe's prompt is shorter than most.
func (p Preflight) RequestE2E(outputTokens float64) time.Duration {
	if p.OutputTokens < 2 || !(outputTokens > 1) || p.E2E < p.TTFT {
		return p.E2E
	}
	return p.TTFT + time.Duration(p.perToken()*(outputTokens-1))
}

// perToken is the probe's time per output token, (E2E − TTFT) ÷ (N_out − 1), in nanoseconds.
func (p Preflight) perToken() float64 { return float64(p.E2E-p.TTFT) / float64(p.OutputTokens-1) }

// Pace is the probe's time per output token after its first (perToken); 0 when it had a single
// token. It bounds each stream's time (DESIGN §3.6).
func (p Preflight) Pace() time.Duration {
	if p.OutputTokens < 2 || p.E2E < p.TTFT {
		return 0
	}
	return time.Duration(p.perToken())
}

// WindowCheck is the preflight's sanity check of a plan (DESIGN §3.1): can its smallest level
// complete min_requests requests within the longest measurement window?
type WindowCheck struct {
	// Concurrency is the plan's smallest level; E2E the estimated E2E of one of its requests
	// (Preflight.RequestE2E) and OutputTokens the length it was estimated for (0: unknown).
	Concurrency  int
	E2E          time.Duration
	OutputTokens float64
	// Need is the window its min_requests need: ⌈min_requests ÷ concurrency⌉ × (E2E + think
	// time); Max the longest window, max(duration, max_duration).
	Need, Max time.Duration
	// Fits reports Need ≤ Max (true when min_requests is 0).
	Fits bool
}

// CheckWindow checks that the smallest of levels can complete minRequests requests of
// outputTokens tokens (0: unknown) within its longest window (Protocol.LongestWindow), each taking the E2E the probe
// suggests plus think: a closed loop of c workers completes about c requests per E2E + think.
// A plan that cannot is worth a warning before the sweep: its first levels would end at
// max_duration short of min_requests: not steady, kept as imprecise at best (DESIGN §3.2).
func (p Preflight) CheckWindow(minRequests int, longest time.Duration, levels []int, outputTokens float64, think time.Duration) WindowCheck {
	w := WindowCheck{Concurrency: 1, OutputTokens: outputTokens, Max: longest, Fits: true}
	if len(levels) > 0 {
		w.Concurrency = max(slices.Min(levels), 1)
	}
	w.E2E = p.RequestE2E(outputTokens)
	if minRequests <= 0 {
		return w
	}
	rounds := (minRequests + w.Concurrency - 1) / w.Concurrency
	w.Need = time.Duration(rounds) * (w.E2E + max(think, 0))
	w.Fits = w.Need <= w.Max
	return w
}
