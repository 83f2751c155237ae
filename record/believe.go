package record

import (
	"fmt"
	"strings"
)

// What of a record is believed (DESIGN §1, §7): which records' tokens count toward
// throughput.

// CountsTokens reports whether r's tokens count toward throughput (TokensInWindow, DESIGN
// §1): those of a request that succeeded, or that was cancelled with what it had received so
// far, at the drain or an interrupt (ErrCancelled) or by its user (ErrUserCancel, as a user
// who leaves mid-answer). Every other record counts none, whatever it received first: a failure
// of any class (StatusError; whichever classes there are), a cancelled record of another class
// or a status that is none of these is not believed, and a level where every request failed
// has no throughput, input or output.
func (r *Record) CountsTokens() bool {
	switch r.Status {
	case StatusOK:
		return true
	case StatusCancelled:
		return r.ErrorClass == ErrCancelled || r.ErrorClass == ErrUserCancel || r.ErrorClass == ""
	}
	return false
}

// Usage plausibility (DESIGN §7): the usage a server reports is believed only when a server
// could have sent it for the stream that arrived. The rules are these, once: the client
// applies them to each answer as it ends (sweep/openai), and `kneecap analyze` to every
// record it reads back (Record.Recheck), so an edited records.jsonl, or one written by an
// older kneecap, is held to them too.
const (
	// DefaultTokensPerChunk is the most tokens one content chunk is believed to carry when
	// the server does not say how many it streams in one (TokensPerChunkBound): generous,
	// because disbelieving a true count costs more (output TPS from chunks that carry several
	// tokens each) than believing a modest lie.
	DefaultTokensPerChunk = 64
	// maxTemplateTokens is the most tokens a chat template may add to a prompt: a reported
	// prompt_tokens above the request's bytes (its JSON body: the prompt and whatever
	// extra_body adds) plus this is not believed (a token of text covers at least one byte).
	maxTemplateTokens = 1024
	// minPromptFraction is the least fraction of the requested prompt length a reported
	// prompt_tokens may be.
	minPromptFraction = 0.25
)

// TokensPerChunkBound returns the most tokens one content chunk may carry from a server that
// streams declared tokens in a chunk (target.tokens_per_chunk, else what its info says; 0:
// unknown): 4 × declared (the tokens a speculative-decoding step may accept), else
// DefaultTokensPerChunk.
func TokensPerChunkBound(declared int) int {
	if declared <= 0 {
		return DefaultTokensPerChunk
	}
	return 4 * declared
}

// ChunkBound returns the bound of tokens in one content chunk that a sweep checks usage
// against (TokensPerChunkBound): of the tokens per chunk its configuration declares
// (target.tokens_per_chunk), else of those its server's info says (info: what the run recorded,
// may be nil), else the default. A sharded sweep (sharded) does not use the info: only its
// shard 0 reads it, and every shard holds its records to the one bound. The live sweep and
// `kneecap analyze` of a levels.json without the bound (LevelRun.TokensPerChunkBound) both
// take it from here.
func ChunkBound(declared int, info *ServerInfo, sharded bool) int {
	if declared <= 0 && !sharded {
		declared = info.TokensPerChunk()
	}
	return TokensPerChunkBound(declared)
}

// Stream is what arrived of a request, which bounds the usage its server could report.
type Stream struct {
	// Chunks is the content chunks that arrived (reasoning and answer), ReasoningChunks those
	// that carried reasoning content only.
	Chunks, ReasoningChunks int
	// ChunksKnown reports that Chunks is known: a record read back without chunk offsets or
	// an ITL summary does not say how many chunks it had (Chunks is then 1, its first).
	ChunksKnown bool
	// MaxTokens is the max_tokens sent (0: not sent).
	MaxTokens int
	// RequestedPrompt is the prompt length asked for, in tokens (0: unknown).
	RequestedPrompt int
	// SentBytes is the request's bytes (its JSON body, at least the prompt): 0 when unknown
	// (a record read back), and the byte rule is not applied.
	SentBytes int
	// PerChunk is the most tokens one content chunk may carry (TokensPerChunkBound).
	PerChunk int
}

// Believe holds the usage r carries to what arrived (s), DESIGN §7: OutputTokens when
// TokensSource is usage (with ReasoningTokens), PromptTokens when promptUsage says it is the
// server's count, and CachedTokens. A count not believed is replaced by what s shows — the
// content chunks for the output (TokensSource chunks, the reported count kept in
// UsageOutputTokens), the requested length for the prompt (kept in UsagePromptTokens), no
// reasoning or cached tokens — and TokensNote gains why. It returns the notes it added,
// "" when everything was believed.
func (r *Record) Believe(s Stream, promptUsage bool) string {
	var notes []string
	if r.TokensSource == TokensFromUsage {
		n := r.OutputTokens
		if why := implausibleOutput(n, r.ReasoningTokens, s); why != "" {
			r.UsageOutputTokens = int64(n)
			r.OutputTokens, r.TokensSource, r.ReasoningTokens = s.Chunks, TokensFromChunks, 0
			notes = append(notes, fmt.Sprintf("completion_tokens %d not believed: %s; output_tokens counts the %d content chunks", n, why, s.Chunks))
		} else if rt := r.ReasoningTokens; rt < 0 || rt > n {
			r.ReasoningTokens = 0
			notes = append(notes, fmt.Sprintf("reasoning_tokens %d not believed: outside [0, completion_tokens %d]", rt, n))
		}
	}
	if n := r.PromptTokens; promptUsage {
		if why := implausiblePrompt(n, s); why != "" {
			r.UsagePromptTokens, r.PromptTokens = int64(n), s.RequestedPrompt
			notes = append(notes, fmt.Sprintf("prompt_tokens %d not believed: %s; prompt_tokens is the requested %d", n, why, s.RequestedPrompt))
		}
	}
	if c := r.CachedTokens; c != nil && (*c < 0 || *c > r.PromptTokens) {
		r.CachedTokens = nil
		notes = append(notes, fmt.Sprintf("cached_tokens %d not believed: outside [0, prompt_tokens %d]", *c, r.PromptTokens))
	}
	added := strings.Join(notes, "; ")
	if added != "" && r.TokensNote != "" {
		r.TokensNote += "; " + added
	} else if added != "" {
		r.TokensNote = added
	}
	return added
}

// implausibleOutput says why usage.completion_tokens n, reasoning of them reasoning tokens (0:
// not reported), cannot be the output of stream s, or "". A content chunk carries at least one
// token and at most s.PerChunk; reasoning the server counted but did not stream (OpenAI's
// reasoning models: reasoning_tokens, no reasoning chunks) is left out of the upper bound.
func implausibleOutput(n, reasoning int, s Stream) string {
	switch {
	case n < 0:
		return "negative"
	case n > MaxTokens:
		return fmt.Sprintf("more than %d (absurd)", MaxTokens)
	case s.MaxTokens > 0 && n > s.MaxTokens:
		return fmt.Sprintf("more than the max_tokens %d sent", s.MaxTokens)
	case s.Chunks == 0 || !s.ChunksKnown:
		return ""
	case n < s.Chunks:
		return fmt.Sprintf("fewer than the %d content chunks streamed (each carries at least one token)", s.Chunks)
	}
	visible := n
	if s.ReasoningChunks == 0 && reasoning > 0 && reasoning <= n {
		visible -= reasoning
	}
	if visible > s.PerChunk*s.Chunks {
		return fmt.Sprintf("more than %d tokens per content chunk over %d chunks", s.PerChunk, s.Chunks)
	}
	return ""
}

// implausiblePrompt says why usage.prompt_tokens n cannot count the prompt of a request of
// stream s, or "".
func implausiblePrompt(n int, s Stream) string {
	switch {
	case n < 0:
		return "negative"
	case n > MaxTokens:
		return fmt.Sprintf("more than %d (absurd)", MaxTokens)
	case s.SentBytes > 0 && n > s.SentBytes+maxTemplateTokens:
		return fmt.Sprintf("more than the request's %d bytes plus %d tokens of chat template (a token covers at least one byte)", s.SentBytes, maxTemplateTokens)
	case float64(n) < minPromptFraction*float64(s.RequestedPrompt):
		return fmt.Sprintf("less than %.0f%% of the %d tokens requested", minPromptFraction*100, s.RequestedPrompt)
	}
	return ""
}

// Recheck holds the usage of r, a record read back from records.jsonl, to the rules of
// DESIGN §7 (Believe), perChunk the most tokens one content chunk may carry: what arrived is
// what r keeps — its content chunks (contentChunks), the max_tokens it sent, the prompt length
// it asked for; an output count that is not its chunk count is taken for the server's, as is
// a prompt count that is not the requested one. The request's bytes are not kept, so the
// byte rule of the prompt does not apply. A live record passes unchanged (the client applied
// the same rules, with its bytes); an edited one, or one from a kneecap before a rule, may
// not. It returns the notes added ("" when everything was believed); TokensNote stays what the
// file says (the live client's notes, which blame the server), the caller reports the notes
// returned (analysis.RecheckUsage), so a record is not warned of twice.
func (r *Record) Recheck(perChunk int) string {
	s := Stream{MaxTokens: r.RequestedOutputTokens, RequestedPrompt: r.RequestedPromptTokens,
		ReasoningChunks: r.ReasoningChunks, PerChunk: perChunk}
	s.Chunks, s.ChunksKnown = r.contentChunks()
	src := r.TokensSource
	if r.Inputs == 0 && src != TokensFromUsage && r.OutputTokens != s.Chunks {
		r.TokensSource = TokensFromUsage // a count the chunks do not show: the server's
	}
	promptUsage := r.UsagePromptTokens == 0 && r.PromptTokens != r.RequestedPromptTokens
	live := r.TokensNote
	note := r.Believe(s, promptUsage)
	r.TokensNote = live
	if r.TokensSource == TokensFromUsage {
		r.TokensSource = src // believed: as it was
	}
	return note
}

// contentChunks returns the content chunks of r and whether their number is known: those its
// Chunks and ChunksTail count, else those its ITL summary does (its gaps + 1); without either,
// none when it had no first token (known), else one, its first (not known).
func (r *Record) contentChunks() (n int, known bool) {
	switch {
	case len(r.Chunks) > 0:
		return ChunkCount(r), true
	case r.ITL != nil:
		return r.ITL.Count + 1, true
	case r.TTFT <= 0:
		return 0, true
	}
	return 1, false
}
