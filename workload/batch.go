package workload

import (
	"fmt"

	"github.com/kneecap/kneecap/record"
)

// batched is an embeddings workload (target.api embeddings): each request carries n inputs,
// the prompts the inner workload gives for n consecutive sequence numbers, each sized in the
// server's tokens as a completions prompt is (no chat template). PromptTokens is their sum; an
// embedding has no output, so no max_tokens or ignore_eos is sent.
type batched struct {
	inner Workload
	n     int
}

// Batch returns w as the workload of api: for embeddings, requests of batch inputs each
// (workload.batch; 0 means 1), drawn from w once its prompts are sized (SizePrompts); for
// every other API, w unchanged.
func Batch(w Workload, api record.API, batch int) Workload {
	if api != record.APIEmbeddings {
		return w
	}
	return &batched{inner: w, n: max(batch, 1)}
}

// Next returns the request worker sends as its seq-th request of level: the inner workload's
// requests seq·n … seq·n + n − 1 of that worker and level, as inputs (the model of the first).
func (b *batched) Next(level, worker, seq int) record.Request {
	req := record.Request{Inputs: make([]string, b.n)}
	for i := range b.n {
		r := b.inner.Next(level, worker, seq*b.n+i)
		req.Inputs[i] = r.Prompt
		req.PromptTokens += r.PromptTokens
		if i == 0 {
			req.Model = r.Model
		}
	}
	return req
}

// validateBatch checks workload.batch: 0 (unset, one input) or more.
func (w WorkloadConfig) validateBatch() []error {
	if w.Batch < 0 {
		return []error{fmt.Errorf("workload.batch: is %d: must be ≥ 1 (inputs per embeddings request)", w.Batch)}
	}
	return nil
}
