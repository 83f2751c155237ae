package record

import (
	"context"
	"time"
)

// API selects the OpenAI endpoint.
type API string

// Supported APIs.
const (
	APIChat        API = "chat"        // POST /v1/chat/completions
	APICompletions API = "completions" // POST /v1/completions
	APIResponses   API = "responses"   // POST /v1/responses (the OpenAI Responses API)
	APIMessages    API = "messages"    // POST /v1/messages (the Anthropic Messages API)
	APIEmbeddings  API = "embeddings"  // POST /v1/embeddings (not streamed)
)

// Streams reports whether the API answers with a token stream (every one but embeddings).
func (a API) Streams() bool { return a != APIEmbeddings }

// Request is one generation request produced by the workload.
type Request struct {
	// Prompt is the user message (chat) or the prompt (completions).
	Prompt string
	// PromptTokens is the workload's count of the prompt's tokens: the requested length in the
	// server's tokens when the prompts were sized (DESIGN §3.6), else words. It is the
	// record's requested length, and its length when the server does not report usage.
	PromptTokens int
	// MaxTokens is max_tokens; 0 leaves it unset.
	MaxTokens int
	// IgnoreEOS asks the server to generate exactly MaxTokens (vLLM's ignore_eos and
	// min_tokens).
	IgnoreEOS bool
	// History is the conversation so far (workload.sessions), sent before Prompt as
	// messages of the chat API; nil for a single-turn request.
	History []Message
	// KeepReply asks the client to keep the streamed answer content (delta.content, not
	// reasoning) in Reply; without it nothing is kept.
	KeepReply bool
	// Reply is the answer content the server streamed, when KeepReply.
	Reply string
	// Model is the model the request names (workload.models: a base model or a LoRA
	// adapter); "" sends the target's model.
	Model string
	// Inputs are an embeddings request's inputs (workload.batch of them), each sized as a
	// prompt; PromptTokens is then their sum. nil for the streaming APIs.
	Inputs []string
	// Cancel closes the stream early, as a user who leaves mid-answer does
	// (workload.cancel); nil reads it to its end.
	Cancel *Cancel
	// Budget is the sweep's answer budget, carried by the first level's requests (nil: none):
	// a request that has streamed no content at its Deadline, while no request carrying it
	// has, is cut (class timeout), and its first content chunk answers it.
	Budget *AnswerBudget
}

// Cancel says when the client closes a stream early: after AfterTokens content chunks, or
// After from t_send, whichever comes first (0: that rule is off).
type Cancel struct {
	AfterTokens int
	After       time.Duration
}

// Client sends streaming requests to an OpenAI-compatible endpoint. Implementations live
// outside this package (sweep/openai); they must be safe for concurrent use.
type Client interface {
	// Do sends req as a streaming request, reads the stream to its end, and fills rec's
	// Sent, ConnWait, TTFT, E2E, Chunks/ITL, PromptTokens, OutputTokens, TokensSource,
	// Status, ErrorClass and Error fields, and the requested lengths, TTFA, reasoning,
	// usage-plausibility and Retried fields. It never returns before the stream has ended or
	// ctx is done; a cancelled ctx yields Status cancelled.
	Do(ctx context.Context, req *Request, rec *Record)
	// Models lists the served model IDs (GET /v1/models).
	Models(ctx context.Context) ([]string, error)
}
