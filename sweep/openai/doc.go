// Package openai implements record.Client on github.com/sashabaranov/go-openai: streaming
// chat completions (POST /v1/chat/completions) and completions (POST /v1/completions) with
// stream_options.include_usage, timed per DESIGN §1.
//
// Timing. t_send is the moment the transport hands the request a connection
// (httptrace GotConn), right before the request is written; conn_wait = GotConn − GetConn.
// TTFT = t(first chunk whose choices carry non-empty content, reasoning_content, reasoning or
// text) − t_send; a role-only chunk does not count. E2E = t(last content chunk) − t_send.
// Chunk arrival offsets from t_send are kept in microseconds (Record.Chunks, the first
// Options.MaxRecordedChunks; the rest in Record.ChunksTail) or summarised (Record.ITL). N_out is usage.completion_tokens from the final usage chunk, else the number
// of content chunks (Record.TokensSource says which).
//
// go-openai has no extra-body hook for chat or completion requests, so the adapter gives
// go-openai an HTTPDoer that merges Options.ExtraBody (and, per request, ignore_eos and
// min_tokens = max_tokens) into the JSON body before the request reaches the transport, and
// wraps every response body. go-openai opens each stream; the adapter reads it (events.go:
// go-openai's line rules without its per-line copies and regexps), checks it for the terminal
// "data: [DONE]" (a cut stream is an error, not a clean end), caps lines at
// Options.MaxLineBytes and non-data lines at Options.MaxNonDataBytes; non-stream bodies are
// capped at MaxBodyBytes.
//
// Deadlines (watch.go): Options.RequestTimeout from the send to the end of the stream,
// TTFTTimeout to the first content chunk and StallTimeout between stream events after it, all
// kept by one timer per request that is re-armed only when it fires; the reading goroutine
// publishes each event with an atomic store. A request ends at "data: [DONE]"; the rest of the
// body is drained in the background once the server has left one open (Client.finish).
//
// Redirects (redirect.go) are followed only to the request's origin and only when they keep
// the method and body (307, 308, or any redirect of a GET); others fail the request as class
// redirect, naming the Location, so nothing is ever sent to another origin.
//
// Failures are classified into the error classes of sweep/record.go: connect, timeout,
// http_4xx, http_429, http_5xx, stream_broken, bad_chunk, empty, redirect, client (the load
// generator's own limit: too many open files, …), and cancelled (Status cancelled) when the
// caller's context ends. The API key is sent as a Bearer token and is scrubbed from every error
// message.
package openai
