package openai

import (
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// Usage plausibility (DESIGN §7): the usage a server reports is believed only when a server
// could have sent it for the stream that arrived.
const (
	// DefaultMaxTokensPerChunk is the default of Options.MaxTokensPerChunk: generous, because
	// disbelieving a true count costs more (output TPS from chunks that carry several tokens
	// each) than believing a modest lie.
	DefaultMaxTokensPerChunk = 64
	// MaxPlausibleTokens is the largest token count believed for a prompt or an output:
	// beyond the context of any model served today.
	MaxPlausibleTokens = record.MaxTokens
	// MaxTemplateTokens is the most tokens a chat template may add to a prompt: a reported
	// prompt_tokens above the request's bytes (its JSON body: the prompt and whatever
	// extra_body adds) plus this is not believed (a token of text covers at least one byte).
	MaxTemplateTokens = 1024
	// MinPromptFraction is the least fraction of the requested prompt length a reported
	// prompt_tokens may be.
	MinPromptFraction = 0.25
)

// merge takes the counts v sets: the last event that sets a count wins (vLLM's
// continuous_usage_stats repeats them in every chunk).
func (u *usageCounts) merge(v usageCounts) {
	if v.completion.set {
		u.completion = v.completion
	}
	if v.prompt.set {
		u.prompt = v.prompt
	}
	if v.reasoning.set {
		u.reasoning = v.reasoning
	}
	if v.cached.set {
		u.cached = v.cached
	}
}

// streamCounts is what a stream showed of its tokens: its content chunks, those that carried
// reasoning content only, and the usage it reported; and the bytes of the request it
// answered (its JSON body, at least the prompt), which bound the prompt's tokens.
type streamCounts struct {
	chunks, reasoningChunks int
	usage                   usageCounts
	sentBytes               int
}

// setTokens fills rec's token fields from what the stream of req showed: OutputTokens,
// TokensSource, PromptTokens, ReasoningTokens and CachedTokens from the usage where it is
// believed (cached tokens within [0, the prompt's]), else
// from the content chunks and the request, keeping the usage not believed in
// UsageOutputTokens and UsagePromptTokens with TokensNote saying why. perChunk is the most
// tokens one content chunk may carry.
func setTokens(rec *record.Record, sc streamCounts, req *record.Request, perChunk int) {
	u := sc.usage
	var notes []string
	rec.OutputTokens, rec.TokensSource = sc.chunks, record.TokensFromChunks
	if u.completion.set {
		if why := implausibleOutput(u, sc, req.MaxTokens, perChunk); why != "" {
			rec.UsageOutputTokens = int64(u.completion.n)
			notes = append(notes, fmt.Sprintf("completion_tokens %d not believed: %s; output_tokens counts the %d content chunks", u.completion.n, why, sc.chunks))
		} else {
			rec.OutputTokens, rec.TokensSource = u.completion.n, record.TokensFromUsage
			if r := u.reasoning; r.set && (r.n < 0 || r.n > u.completion.n) {
				notes = append(notes, fmt.Sprintf("reasoning_tokens %d not believed: outside [0, completion_tokens %d]", r.n, u.completion.n))
			} else if r.set {
				rec.ReasoningTokens = r.n
			}
		}
	}
	rec.PromptTokens = req.PromptTokens
	if u.prompt.set {
		if note := promptUsage(rec, u.prompt.n, req, max(sc.sentBytes, len(req.Prompt))); note != "" {
			notes = append(notes, note)
		}
	}
	if c := u.cached; c.set {
		if c.n < 0 || c.n > rec.PromptTokens {
			notes = append(notes, fmt.Sprintf("cached_tokens %d not believed: outside [0, prompt_tokens %d]", c.n, rec.PromptTokens))
		} else {
			n := c.n
			rec.CachedTokens = &n
		}
	}
	rec.TokensNote = strings.Join(notes, "; ")
}

// implausibleOutput says why usage.completion_tokens cannot be the output of a stream of
// sc.chunks content chunks under max_tokens maxTokens (0: not sent), or "". A content chunk
// carries at least one token and at most perChunk; reasoning the server counted but did not
// stream (OpenAI's reasoning models: reasoning_tokens, no reasoning chunks) is left out of the
// upper bound.
func implausibleOutput(u usageCounts, sc streamCounts, maxTokens, perChunk int) string {
	n := u.completion.n
	switch {
	case n < 0:
		return "negative"
	case n > MaxPlausibleTokens:
		return fmt.Sprintf("more than %d (absurd)", MaxPlausibleTokens)
	case maxTokens > 0 && n > maxTokens:
		return fmt.Sprintf("more than the max_tokens %d sent", maxTokens)
	case sc.chunks == 0:
		return ""
	case n < sc.chunks:
		return fmt.Sprintf("fewer than the %d content chunks streamed (each carries at least one token)", sc.chunks)
	}
	visible := n
	if r := u.reasoning; r.set && sc.reasoningChunks == 0 && r.n > 0 && r.n <= n {
		visible -= r.n
	}
	if visible > perChunk*sc.chunks {
		return fmt.Sprintf("more than %d tokens per content chunk over %d chunks", perChunk, sc.chunks)
	}
	return ""
}

// promptUsage sets rec.PromptTokens to usage.prompt_tokens n of req's request of sent
// bytes when it is believed (implausiblePrompt), else keeps the requested count, keeps n in
// UsagePromptTokens and returns the note saying why.
func promptUsage(rec *record.Record, n int, req *record.Request, sent int) (note string) {
	if why := implausiblePrompt(n, req, sent); why != "" {
		rec.UsagePromptTokens = int64(n)
		return fmt.Sprintf("prompt_tokens %d not believed: %s; prompt_tokens is the requested %d", n, why, req.PromptTokens)
	}
	rec.PromptTokens = n
	return ""
}

// implausiblePrompt says why usage.prompt_tokens n cannot count req's prompt, sent in a
// request of sent bytes, or "".
func implausiblePrompt(n int, req *record.Request, sent int) string {
	switch {
	case n < 0:
		return "negative"
	case n > MaxPlausibleTokens:
		return fmt.Sprintf("more than %d (absurd)", MaxPlausibleTokens)
	case n > sent+MaxTemplateTokens:
		return fmt.Sprintf("more than the request's %d bytes plus %d tokens of chat template (a token covers at least one byte)", sent, MaxTemplateTokens)
	case float64(n) < MinPromptFraction*float64(req.PromptTokens):
		return fmt.Sprintf("less than %.0f%% of the %d tokens requested", MinPromptFraction*100, req.PromptTokens)
	}
	return ""
}
