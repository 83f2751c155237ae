package openai

import "github.com/kneecap/kneecap/record"

// DefaultMaxTokensPerChunk is the default of Options.MaxTokensPerChunk
// (record.DefaultTokensPerChunk): the usage plausibility rules are record's (DESIGN §7), the
// same for the live sweep and for the records `kneecap analyze` reads back.
const DefaultMaxTokensPerChunk = record.DefaultTokensPerChunk

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
// TokensSource, PromptTokens, ReasoningTokens and CachedTokens from the usage, else from the
// content chunks and the request; then record.Record.Believe holds the usage to the stream
// (the rules of DESIGN §7, one function for the live sweep and the records analyze reads
// back), keeping a usage not believed in UsageOutputTokens and UsagePromptTokens with
// TokensNote saying why. perChunk is the most tokens one content chunk may carry.
func setTokens(rec *record.Record, sc streamCounts, req *record.Request, perChunk int) {
	u := sc.usage
	rec.OutputTokens, rec.TokensSource = sc.chunks, record.TokensFromChunks
	if u.completion.set {
		rec.OutputTokens, rec.TokensSource = u.completion.n, record.TokensFromUsage
		if u.reasoning.set {
			rec.ReasoningTokens = u.reasoning.n
		}
	}
	rec.PromptTokens = req.PromptTokens
	if u.prompt.set {
		rec.PromptTokens = u.prompt.n
	}
	if c := u.cached; c.set {
		n := c.n
		rec.CachedTokens = &n
	}
	rec.TokensNote = ""
	rec.Believe(record.Stream{
		Chunks: sc.chunks, ReasoningChunks: sc.reasoningChunks, ChunksKnown: true,
		MaxTokens: req.MaxTokens, RequestedPrompt: req.PromptTokens,
		SentBytes: max(sc.sentBytes, len(req.Prompt)), PerChunk: perChunk,
	}, u.prompt.set)
}

// promptUsage sets rec.PromptTokens to usage.prompt_tokens n of req's request of sent bytes
// when it is believed (record.Record.Believe), else keeps the requested count, keeps n in
// UsagePromptTokens and returns the note saying why.
func promptUsage(rec *record.Record, n int, req *record.Request, sent int) (note string) {
	rec.PromptTokens = n
	return rec.Believe(record.Stream{RequestedPrompt: req.PromptTokens, SentBytes: max(sent, 1)}, true)
}
