package openai

import (
	"net/http"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Options configures a Client. Zero values take the defaults of DefaultOptions.
type Options struct {
	// BaseURL is the OpenAI base URL including /v1, for example http://127.0.0.1:8000/v1.
	BaseURL string
	// Model is the model name sent in every request.
	Model string
	// API selects chat, completions, responses or messages (DESIGN §3.11); empty means chat.
	API record.API
	// APIKey is sent as "Authorization: Bearer <key>" when non-empty (for the Messages API as
	// "x-api-key: <key>" instead, with anthropic-version). It is never logged and is scrubbed
	// from every error message.
	APIKey string
	// KeyFrom names where APIKey comes from, never the key ("$OPENAI_API_KEY (target.api_key_env's
	// default for api chat)"), for the message of a 401 or 403 (authHint); "" when no
	// variable is read.
	KeyFrom string
	// Header is sent on every request to the base URL's origin (the API, /models, the
	// preflight, /tokenize and the server-info probes at its root) and on no request to any
	// other origin; New refuses a header CheckHeader refuses, and Authorization beside
	// APIKey. The values of the headers redact.SecretHeader reports are secrets, like
	// APIKey: scrubbed from every error message, and sent to the root's probes only after a
	// refusal without them.
	Header http.Header
	// ExtraBody is merged into every request's JSON body (for example vLLM's ignore_eos);
	// its keys override the fields go-openai writes. New fails when a value has no JSON
	// encoding.
	ExtraBody map[string]any
	// RequestTimeout bounds one request from send to the end of its stream; 0 means no
	// limit besides the caller's context.
	RequestTimeout time.Duration
	// TTFTTimeout bounds the time from the send to the first content chunk (a server that
	// accepts and never answers, or answers and never streams a token); 0 means no limit.
	TTFTTimeout time.Duration
	// StallTimeout bounds the gap between two content chunks (or parts of a tool call) once
	// the first content chunk has arrived; 0 means no limit.
	StallTimeout time.Duration
	// MaxConns is the largest number of concurrent requests the client must carry (the
	// sweep's largest level). The transport keeps at least that many idle connections per
	// host and never caps connections per host, so pooling never throttles a level.
	MaxConns int
	// CAFile is a PEM file of extra trusted CA certificates.
	CAFile string
	// InsecureSkipVerify disables TLS certificate verification.
	InsecureSkipVerify bool
	// RecordChunks keeps every content chunk's arrival offset in Record.Chunks (the first
	// MaxRecordedChunks, then Record.ChunksTail); false keeps only the Record.ITL summary.
	RecordChunks bool
	// MaxRecordedChunks caps the offsets one record keeps in Record.Chunks; the chunks past
	// them are summarised in Record.ChunksTail.
	MaxRecordedChunks int
	// MaxLineBytes caps one line of a stream, in bytes; a longer line fails the request
	// as bad_chunk.
	MaxLineBytes int
	// MaxNonDataBytes caps the bytes of non-"data:" lines in one stream (the adapter keeps
	// them, as go-openai did, to report a body that spells a JSON error object).
	MaxNonDataBytes int
	// MaxBodyBytes caps a non-stream response body (errors, /v1/models), in bytes.
	MaxBodyBytes int64
	// MaxChunks caps the content chunks of one request; more fail it as bad_chunk.
	MaxChunks int
	// DialTimeout bounds establishing one TCP connection (and the TLS handshake).
	DialTimeout time.Duration
	// MaxTokensPerChunk is the most tokens one content chunk may carry, as the server declares
	// it (its stream interval, times the tokens one speculative-decoding step may accept): a
	// usage.completion_tokens above MaxTokensPerChunk × the content chunks is not believed
	// (DESIGN §7).
	MaxTokensPerChunk int
}

// DefaultOptions returns the defaults: chat API, 10 min request timeout, 60 s to the first
// token, 30 s of stall between chunks, 256 connections, chunk recording on (the offsets of
// record.MaxRecordedChunks chunks a record), 1 MiB lines, 1 MiB of non-data lines, 8 MiB
// non-stream bodies, 1 Mi chunks per request, 30 s dial timeout, DefaultMaxTokensPerChunk
// tokens per chunk.
func DefaultOptions() Options {
	return Options{
		API:             record.APIChat,
		RequestTimeout:  10 * time.Minute,
		TTFTTimeout:     60 * time.Second,
		StallTimeout:    30 * time.Second,
		MaxConns:        256,
		RecordChunks:    true,
		MaxLineBytes:    1 << 20,
		MaxNonDataBytes: 1 << 20,
		MaxBodyBytes:    8 << 20,
		MaxChunks:       1 << 20,
		DialTimeout:     30 * time.Second,

		MaxTokensPerChunk: DefaultMaxTokensPerChunk,
		MaxRecordedChunks: record.MaxRecordedChunks,
	}
}

// orDefault sets *v, an option, to its default def when it is not positive (unset).
func orDefault[T ~int | ~int64](v *T, def T) {
	if *v <= 0 {
		*v = def
	}
}
