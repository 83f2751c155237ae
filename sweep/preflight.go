package sweep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// PreflightTimeout bounds the preflight (DESIGN §3): GET /v1/models and one probe request.
const PreflightTimeout = 10 * time.Second

// Preflight is what the preflight learned of an endpoint that answered.
type Preflight struct {
	// TTFT is the probe request's time to first token.
	TTFT time.Duration
	// ModelsErr is the error of GET /v1/models when it failed but the probe worked (a
	// warning: some servers do not list models).
	ModelsErr error
}

// ModelNotServedError is the preflight's answer for an endpoint whose GET /v1/models lists
// other models than the one configured (a configuration error).
type ModelNotServedError struct {
	Model  string
	Served []string
}

func (e *ModelNotServedError) Error() string {
	return fmt.Sprintf("does not serve model %q; it serves: %s", e.Model, strings.Join(e.Served, ", "))
}

// UnreachableError is the preflight's answer for an endpoint that did not answer the probe
// request, or answered it with a failure: Cause says why, on one line.
type UnreachableError struct {
	Cause string
}

func (e *UnreachableError) Error() string { return e.Cause }

// RunPreflight checks the endpoint behind client before the sweep, within timeout: GET
// /v1/models must list model when the server answers it, and one tiny streaming request must
// succeed. It returns a *ModelNotServedError or an *UnreachableError, so that a bad endpoint is
// one clear line within seconds, not a sweep full of errors.
func RunPreflight(ctx context.Context, client Client, model string, timeout time.Duration) (Preflight, error) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	models, merr := client.Models(pctx)
	if merr == nil && len(models) > 0 && !slices.Contains(models, model) {
		return Preflight{}, &ModelNotServedError{Model: model, Served: models}
	}
	if merr != nil && pctx.Err() != nil {
		return Preflight{}, &UnreachableError{Cause: fmt.Sprintf("no answer within %s (%v)", timeout, merr)}
	}
	req := Request{Prompt: "Reply with one word: ok", PromptTokens: 6, MaxTokens: 2}
	var rec Record
	client.Do(pctx, &req, &rec)
	if !rec.OK() {
		cause := rec.Error
		if cause == "" {
			cause = string(rec.Status)
		}
		if rec.Status == StatusCancelled && pctx.Err() != nil && ctx.Err() == nil {
			cause = fmt.Sprintf("no complete answer within %s", timeout)
		}
		if merr != nil && rec.ErrorClass != ErrConnect && rec.ErrorClass != ErrTimeout {
			cause += fmt.Sprintf(" (and GET /models: %v)", merr)
		}
		if rec.ErrorClass != "" {
			cause = string(rec.ErrorClass) + ": " + cause
		}
		return Preflight{}, &UnreachableError{Cause: strings.ReplaceAll(cause, "\n", " ")}
	}
	return Preflight{TTFT: rec.TTFT, ModelsErr: merr}, nil
}
