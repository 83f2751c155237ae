// Package sim is a simulated LLM inference engine behind an OpenAI-compatible HTTP API. It is
// kneecap's built-in target, the fixture its tests measure against, and `kneecap sim`. It
// imports no other kneecap package.
//
// # Engines
//
// Batching mode is a discrete-step model of a continuous-batching server (vLLM, SGLang),
// running in real time in one engine goroutine:
//
//   - S = max_num_seqs decode slots, a KV cache of kv_cache_tokens tokens (0 = unlimited; a
//     request holds its prompt plus its generated tokens) and an FCFS waiting queue.
//   - Each step admits waiting requests first come first served, without skipping, while a
//     slot and KV room are free; prefills admitted prompts at prefill_tps, at most
//     max_batched_tokens prompt tokens per step (chunked prefill), which lengthens that step
//     for everyone; then produces one token for every running sequence. A request's first
//     token comes at the end of the step that completes its prefill.
//   - Step time: t(b) = step_base + step_per_seq × b + step_per_kv_token × (KV tokens in
//     use), plus (prompt tokens prefilled in the step) ÷ prefill_tps, where b is the number
//     of sequences producing a token in the step.
//   - Steps run against an absolute schedule (end of step k+1 = end of step k + its duration),
//     so timer jitter does not accumulate as drift; an engine that falls behind runs the next
//     step at once (and restarts the schedule when more than 50 ms behind).
//   - KV without preemption: admission reserves prompt + output tokens, so the cache never
//     overflows. With preemption (vLLM's recompute), admission needs room for the prompt plus
//     one token per running sequence, and when the cache cannot hold the next token of every
//     running sequence the most recently admitted request is evicted to the head of the
//     queue; its KV is discarded and rebuilt by prefilling prompt + generated tokens when it
//     is admitted again (tokens already streamed stay streamed). Each eviction counts in
//     vllm:num_preemptions_total. Thrashing makes throughput fall past overload.
//   - A client that goes away frees its slot and KV at the next step. Tokens reach the HTTP
//     handler through a per-request counter and a one-slot notification channel, so a slow
//     client never blocks the engine and buffers stay bounded.
//
// Compute (batching mode) is how a step's time is spent: sleep waits it out on a timer; spin
// burns it on the engine goroutine's locked OS thread, as a CPU engine (llama.cpp on CPU)
// does, so the engine competes with its clients for the cores. The schedule, and so the ground
// truth below, is the same; idle, the engine blocks either way.
//
// Fixed mode gives every request its first token TTFT after arrival and one more token every
// ITL (one timer per stream). With fixed_slots N at most N requests are served at once, the
// rest wait FCFS and get their first token TTFT after getting a slot; a request holds its slot
// for TTFT + (n − 1) × ITL. Unlimited (0, the default), it never saturates.
//
// Embeddings (POST /v1/embeddings, either mode) run on an encoder engine of their own
// (embed.go): forward passes of at most embed.batch queued inputs, FCFS, each taking
// embed.step_base + embed.per_token × its input tokens, so inputs of L tokens plateau at
// Batch·L ÷ (step_base + Batch·L·per_token) input tokens a second.
//
// # Ground truth
//
// With unlimited KV and negligible prefill, a closed loop of c clients sees in batching mode
//
//	TPS(c) = c ÷ t(c)        for c ≤ S,
//	TPS(c) = S ÷ t(S)        for c > S (flat),
//
// and TTFT grows about linearly for c > S: a request waits for about (c − S) ÷ S service
// times, one service time being N_out × t(S). Prefill of P-token prompts lengthens the mean
// step to t(c) + (c ÷ N_out) × P ÷ prefill_tps; a client's turnaround between requests costs
// about one step per request (a factor N_out ÷ (N_out + 1)). The demo profile has
// t(32) = 4 ms + 32 × 250 µs = 12 ms, a plateau of 32 ÷ 12 ms ≈ 2,667 tokens/s from c = 32.
// Config.IdealTPS computes the formula. In fixed mode E2E = TTFT + (N_out − 1) × ITL; the
// seed-article profile gives 0.3 s + 99 × 0.05 s = 5.25 s for 100 tokens. With N fixed slots
// the capacity is N ÷ (TTFT + (N_out − 1) × ITL) requests/s (Config.FixedCapacity).
//
// # Tokens
//
// Prompt tokens: the rule Config.Tokenizer names — words (countTokens: one token per
// whitespace-separated word, strings.Fields) or subword (countSubwordTokens: ⌈n ÷ 4⌉ tokens
// for a word of n bytes) — across all message contents (chat; text parts of array contents)
// or the prompt (completions; a token-id array counts its length), plus chat_template_tokens
// for a chat request. That one count (Config.promptTokens) is usage.prompt_tokens, the
// /tokenize count, the context-limit check, the KV the request holds and its prefill work.
// TokenCounter gives it for a chat request of one message, for tests that size prompts.
// Each output token is the word "tok " in the content, one token under either rule, so
// output counts the same way.
//
// Output length: max_tokens when ignore_eos is set or min_tokens ≥ max_tokens; otherwise a
// draw from output_dist (geometric with mean output_tokens — a constant end-of-sequence
// probability per token — or exactly output_tokens), raised to min_tokens and capped by
// max_tokens. Draws are deterministic: SplitMix64 of the seed and the request's arrival
// sequence number (1, 2, … per server), so a run with the same arrival order repeats. A
// request that reaches max_tokens finishes with "length", otherwise "stop". Without
// max_tokens the cap is max_model_len − prompt (or the KV capacity − prompt), if any.
//
// # HTTP
//
// POST /v1/chat/completions and /v1/completions, streamed (server-sent events ending with
// "data: [DONE]") or not; stream_options.include_usage adds a final chunk with empty choices
// and usage {prompt_tokens, completion_tokens, total_tokens}; chat streams open with vLLM's
// role-only chunk (delta {role: assistant, content: ""}); every chunk is flushed; the first
// content chunk carries the first token and later ones tokens_per_chunk tokens. POST
// /v1/responses (OpenAI Responses: input a string or messages, max_output_tokens) and POST
// /v1/messages (Anthropic Messages: max_tokens required) are the same engine's chat requests
// streamed as those APIs' named events (apis.go), with the same chunks, reasoning and usage;
// their error_rate fault is the API's error event after a 200 (response.failed, error), their
// queue_limit_429 a 429 in the API's error envelope. POST /tokenize as vLLM serves it ({"model", "prompt"} or {"model", "messages",
// "add_generation_prompt"} → {"count", "max_model_len", "tokens"}; the ids are FNV-1a hashes
// of the tokens' texts, max_model_len the context limit, 0 = unlimited). GET /v1/models, GET
// /health, GET /version and GET /metrics (Prometheus text, vLLM series names labelled
// model_name; the KV usage gauges only with a finite kv_cache_tokens; with gpus, the DCGM
// exporter's families, below). An unknown model is
// 404, malformed JSON and prompt + max_tokens >
// max_model_len are 400, all with the OpenAI error body {"error": {"message", "type",
// "param", "code"}}.
//
// reasoning_tokens N makes the first min(N, output) tokens of each chat request reasoning, as
// vLLM's reasoning parsers (DeepSeek-R1) stream them: delta.reasoning_content ("hmm " each;
// message.reasoning_content in a plain answer), then content; a chunk across the boundary
// carries both; usage.completion_tokens counts both and
// completion_tokens_details.reasoning_tokens the reasoning ones. Newer vLLM names the field
// "reasoning" (vllm-project/vllm#27752); the simulator sends DeepSeek's reasoning_content,
// which older vLLM sends and go-openai decodes. Completions have no reasoning.
//
// close_after_stream reproduces llama.cpp's llama-server: a streamed answer advertises
// keep-alive (Connection: keep-alive, Keep-Alive: timeout=5, chunked) and the connection is
// closed right after its last byte (the connection is hijacked to write it). The stream ends
// normally; the next request a client sends on that pooled connection gets EOF before any
// response byte. Plain answers keep their connection.
//
// Faults, drawn per request from the seed like output lengths: error_rate answers 500;
// queue_limit_429 answers 429 while the waiting queue is longer; disconnect_rate aborts the
// connection at a random token position; stall_rate pauses the stream once, at a random
// token position, for stall_duration (default 1 s). Usage faults apply to every request:
// usage_prompt_tokens and usage_completion_tokens replace the counts usage reports (total =
// their sum), omit_usage reports no usage; the content stays true.
//
// # GPU power
//
// gpus N (default 0, none) makes the simulator a tensor-parallel replica of N identical GPUs
// whose DCGM exporter families /metrics serves as dcgm-exporter renders them (labels gpu,
// UUID, pci_bus_id, device, modelName, Hostname): DCGM_FI_DEV_POWER_USAGE
// P(r) = idle_w + (max_w − idle_w) × r ÷ S in W, where r is the running count
// vllm:num_requests_running reports clamped to [0, S] and S is PowerSlots (max_num_seqs, or
// fixed_slots in fixed mode when limited); DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, the exact
// integral of P since the server started in mJ (r is metered at each of its changes, not
// sampled at scrapes); DCGM_FI_DEV_GPU_UTIL 100 while r > 0; DCGM_FI_PROF_SM_ACTIVE r ÷ S;
// DCGM_FI_DEV_FB_USED and DCGM_FI_DEV_SM_CLOCK constant. power defaults to idle 100 W, max
// 700 W.
package sim
