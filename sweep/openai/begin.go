package openai

import (
	"context"
	"net/http/httptrace"
	"time"

	"github.com/kneecap/kneecap/record"
)

// A request's start (Client.Do): its state and deadlines, the record cleared of the last
// request's values, and what the send itself told (recordSent).

// begin starts request req under ctx: its state (reqState), its deadlines armed from now
// (request_timeout, ttft_timeout, stall_timeout, the answer budget, the stream's time bound
// and the request's own cancel), and the
// context it is sent under (reqCtx, carrying the state and the connection trace), cancelled
// through cancel.
func (c *Client) begin(ctx context.Context, req *record.Request) (*reqState, context.Context, context.CancelCauseFunc, time.Time) {
	// The doer adds ignore_eos and min_tokens to go-openai's bodies; the other protocols write
	// what their API accepts themselves.
	st := &reqState{maxTokens: req.MaxTokens, model: req.Model, ignoreEOS: req.IgnoreEOS && c.proto.mergesIgnoreEOS(), whole: !c.api.Streams()}
	start := time.Now()
	reqCtx, cancel := context.WithCancelCause(ctx)
	st.w.leave(req.Cancel)
	stall := c.opts.StallTimeout
	if st.whole {
		// One body and no events: ttft_timeout bounds the whole answer (silence).
		stall = 0
	}
	if b := req.Budget; b != nil {
		st.w.budget, st.w.budgetAt = b, b.Deadline().Sub(start)
	}
	if !st.whole {
		st.w.long = c.streamBound(req)
	}
	st.w.arm(start, c.opts.RequestTimeout, c.opts.TTFTTimeout, stall, cancel)
	reqCtx = context.WithValue(reqCtx, stateKey{}, st)
	reqCtx = httptrace.WithClientTrace(reqCtx, &httptrace.ClientTrace{
		GetConn:              st.getConn,
		GotConn:              st.gotConn,
		GotFirstResponseByte: st.gotFirstByte,
	})
	return st, reqCtx, cancel, start
}

// resetRecord clears every field of rec that Do fills, so that a record reused for another
// request keeps nothing of the last one, and sets what req itself says (its prompt tokens,
// the lengths it asked for, an embeddings request's inputs).
func (c *Client) resetRecord(rec *record.Record, req *record.Request) {
	rec.PromptTokens = req.PromptTokens
	rec.OutputTokens = 0
	rec.TokensSource = ""
	rec.Chunks, rec.ChunksTail = nil, nil
	rec.ITL = nil
	rec.TTFT, rec.E2E, rec.ConnWait = 0, 0, 0
	rec.RequestedPromptTokens, rec.RequestedOutputTokens = req.PromptTokens, max(req.MaxTokens, 0)
	rec.TTFA, rec.ReasoningChunks, rec.ReasoningTokens = 0, 0, 0
	rec.UsageOutputTokens, rec.UsagePromptTokens, rec.TokensNote = 0, 0, ""
	rec.CachedTokens = nil
	rec.Retried = false
	rec.ReadLag, rec.TTFTKernel = nil, 0
	rec.Clock, rec.SendStamp, rec.FirstGather = "", "", 0
	rec.ClientSent, rec.ClientTTFT, rec.ClientE2E = 0, 0, 0
	rec.End, rec.Setup, rec.Dialed = 0, 0, false
	rec.RetryAfter = 0
	rec.Inputs = 0
	if !c.api.Streams() {
		rec.Inputs = len(embedInputs(req))
	}
}

// recordSent notes in rec how request st went out: when it was sent (sendTime; the watch
// learnt it at GotConn), the connection's wait, setup and dial, and whether it was retried; it
// returns the send time.
func (st *reqState) recordSent(rec *record.Record, start time.Time) time.Time {
	tSend := st.sendTime(start)
	rec.Sent = tSend.UnixNano()
	rec.ConnWait = st.connWait()
	rec.Retried = st.retried
	rec.Dialed, rec.Setup = st.dialed(), st.setup()
	return tSend
}

// model is the model req names: its own (workload.models), else the target's.
func (c *Client) model(req *record.Request) string {
	if req.Model != "" {
		return req.Model
	}
	return c.opts.Model
}
