package openai

import (
	"errors"
	"fmt"
	"time"

	"github.com/kneecap/kneecap/record"
)

// A stream's bounds (DESIGN §3.6): an honest server sends at most one content chunk a token, so
// a request for max_tokens N that streams an (N+1)-th content chunk is cut as class overlong —
// the proof that the server ignores max_tokens — whose tokens are not believed (a failure:
// record.Record.CountsTokens). One that streams longer after its first content chunk than N
// tokens at overlongFactor times the preflight's pace (Client.SetPace; never faster than
// minPace a token) plus its slack (the largest of ttft_timeout, stall_timeout and
// minBoundSlack) is cut too, class timeout: a server under load may be that slow honestly,
// so the time bound proves nothing. Past request_timeout, that cuts first (class timeout).

// overlongFactor is how many times the preflight's time a token a stream may take a token
// before it is cut; minPace the least time a token it is given (a 2-token probe's one gap
// may show almost none: tokens sent in one write).
// minBoundSlack the least slack a stream's time bound adds to them.
const (
	overlongFactor = 20
	minPace        = 10 * time.Millisecond
	minBoundSlack  = 10 * time.Second
)

// errOverlongChunks is the error of a stream that sent more content chunks than its
// max_tokens.
var errOverlongChunks = errors.New("overlong")

// SetPace sets the time a token the preflight measured (0: unknown, no time bound), from which
// each stream's time bound is derived. Call it before the sweep's requests start.
func (c *Client) SetPace(perToken time.Duration) { c.pace = max(perToken, 0) }

// streamBound is how long a stream of req may run after its first content chunk before it is
// cut (class timeout): 0 (no bound) when the pace or max_tokens is unknown.
func (c *Client) streamBound(req *record.Request) time.Duration {
	if c.pace <= 0 || req.MaxTokens <= 0 {
		return 0
	}
	perToken := overlongFactor * max(c.pace, minPace)
	return time.Duration(min(req.MaxTokens, record.MaxTokens))*perToken + max(c.opts.TTFTTimeout, c.opts.StallTimeout, c.boundSlack)
}

// chunkCap is the content chunks a stream of req may send: its max_tokens when set (and below
// Options.MaxChunks), else MaxChunks; overlong reports that max_tokens set it.
func (c *Client) chunkCap(req *record.Request) (n int, overlong bool) {
	if req.MaxTokens > 0 && req.MaxTokens < c.opts.MaxChunks {
		return req.MaxTokens, true
	}
	return c.opts.MaxChunks, false
}

// pastCap is the error of a stream whose next content chunk would pass sr's cap.
func (sr *streamRead) pastCap() error {
	if sr.capTokens {
		return fmt.Errorf("%w: more content chunks than max_tokens %d: the server ignores max_tokens", errOverlongChunks, sr.maxChunks)
	}
	return fmt.Errorf("%w: more than %d content chunks", errBadChunk, sr.maxChunks)
}

// pastBound says what a stream cut at its time bound (cause errStreamBound) had streamed.
func (c *Client) pastBound(st *reqState) error {
	return fmt.Errorf("stream bound: still streaming %v after its first token (%d content chunks): longer than max_tokens %d at %d× the preflight's pace %v a token allow; "+
		"a server that slow under load is cut here too (its stream is bounded by ttft_timeout and stall_timeout)",
		st.w.long, st.streamed, st.maxTokens, overlongFactor, c.pace)
}
