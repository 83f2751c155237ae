package record

import "time"

// Phase is the part of a level a request was sent in.
type Phase string

// Phases of a level (DESIGN §3).
const (
	PhaseWarmup  Phase = "warmup"
	PhaseMeasure Phase = "measure"
	PhaseDrain   Phase = "drain"
)

// Status is the outcome of one request.
type Status string

// Request outcomes.
const (
	StatusOK        Status = "ok"
	StatusError     Status = "error"
	StatusCancelled Status = "cancelled"
)

// Known reports whether s is one of the outcomes a record may have: a record read back without
// one, or with another, is refused (its tokens would count or not by accident).
func (s Status) Known() bool {
	return s == StatusOK || s == StatusError || s == StatusCancelled
}

// ErrorClass classifies a failed request (DESIGN §7); it is Record.ErrorClass.
type ErrorClass string

// Error classes of failed requests (DESIGN §7).
const (
	ErrConnect      ErrorClass = "connect"
	ErrTimeout      ErrorClass = "timeout"
	ErrHTTP4xx      ErrorClass = "http_4xx"
	ErrHTTP429      ErrorClass = "http_429"
	ErrHTTP5xx      ErrorClass = "http_5xx"
	ErrStreamBroken ErrorClass = "stream_broken"
	ErrBadChunk     ErrorClass = "bad_chunk"
	ErrEmpty        ErrorClass = "empty"
	ErrCancelled    ErrorClass = "cancelled"
	// ErrRedirect: the server answered with a redirect kneecap does not follow (another
	// origin, or a code that would change the method or drop the body).
	ErrRedirect ErrorClass = "redirect"
	// ErrClient: the load generator's own limit failed the request (too many open files, no
	// memory): never blamed on the server.
	ErrClient ErrorClass = "client"
	// ErrUserCancel: the workload closed the stream early on purpose (workload.cancel), as a
	// user who leaves mid-answer; Status is cancelled, and it is no error: its tokens count.
	ErrUserCancel ErrorClass = "user_cancel"
	// ErrOverlong: the stream ran past its bound — more content chunks than its max_tokens
	// (an honest server sends at most one a token), or longer than its max_tokens at the
	// preflight's pace allow — and was cut; its tokens are not believed (a failure: CountsTokens).
	ErrOverlong ErrorClass = "overlong"
)

// MaxTokens is the largest token count kneecap asks for or believes, for a prompt or an
// output: no served model's context holds more (the largest, Llama 4 Scout's, is 10M). A
// length asked above it is refused before anything is allocated; usage above it is not
// believed.
const MaxTokens = 10_000_000

// TokensSource says where Record.OutputTokens came from.
type TokensSource string

// Tokens sources.
const (
	// TokensFromUsage: usage.completion_tokens of the final usage chunk.
	TokensFromUsage TokensSource = "usage"
	// TokensFromChunks: the number of content chunks (the server reported no usage, or usage
	// that was not believed: Record.TokensNote says why).
	TokensFromChunks TokensSource = "chunks"
)

// Record is one request of a sweep, the line format of records.jsonl. Failures are records
// too: they are never dropped. Durations encode as integer nanoseconds.
type Record struct {
	// Level is the 0-based index of the level in the sweep plan.
	Level int `json:"level"`
	// Concurrency is the target concurrency of the level.
	Concurrency int `json:"concurrency"`
	// Worker is the index of the closed-loop worker that sent the request, 0..Concurrency-1.
	Worker int `json:"worker"`
	// Seq is the worker's request sequence number, from 0.
	Seq int `json:"seq"`
	// Phase is the level phase the request was sent in.
	Phase Phase `json:"phase"`
	// Sent is t_send as Unix nanoseconds: on a kernel record (Clock) the send of the request's
	// last byte, else taken right before the request is written (DESIGN §1).
	Sent int64 `json:"sent_unix_ns"`
	// ConnWait is the time spent getting a connection (pool wait, dial, TLS) before t_send.
	ConnWait time.Duration `json:"conn_wait_ns"`
	// TTFT is the time from t_send to the first chunk with non-empty content or reasoning
	// content; 0 when no content arrived.
	TTFT time.Duration `json:"ttft_ns"`
	// E2E is the time from t_send to the last content chunk (or to the failure).
	E2E time.Duration `json:"e2e_ns"`
	// Chunks holds, for each content chunk, its arrival offset from t_send in microseconds: of
	// the first MaxRecordedChunks chunks (ChunksTail summarises the rest). Empty when chunk
	// recording is off; then ITL holds the summary.
	Chunks []int64 `json:"chunks_us,omitempty"`
	// ChunksTail summarises the content chunks past those Chunks keeps (nil when it keeps
	// every one).
	ChunksTail *ChunkTail `json:"chunks_tail,omitempty"`
	// ITL summarises inter-chunk gaps when Chunks is not recorded.
	ITL *ITLSummary `json:"itl,omitempty"`
	// PromptTokens is the prompt length in tokens (usage.prompt_tokens where it is reported and
	// believed, else the workload's count).
	PromptTokens int `json:"prompt_tokens"`
	// OutputTokens is N_out: usage.completion_tokens where it is reported and believed, else
	// the number of content chunks (reasoning content included).
	OutputTokens int `json:"output_tokens"`
	// TokensSource says where OutputTokens came from: "usage" or "chunks".
	TokensSource TokensSource `json:"tokens_source,omitempty"`
	// Status is ok, error or cancelled.
	Status Status `json:"status"`
	// ErrorClass is one of the Err* classes when Status is not ok.
	ErrorClass ErrorClass `json:"error_class,omitempty"`
	// Error is the error message (never containing secrets).
	Error string `json:"error,omitempty"`

	// RequestedPromptTokens is the prompt length the workload asked for (Request.PromptTokens:
	// in the server's tokens when the sweep sized its prompts by them, DESIGN §3.6), beside
	// PromptTokens, the length the server counted. 0 when unknown.
	RequestedPromptTokens int `json:"requested_prompt_tokens,omitempty"`
	// RequestedOutputTokens is max_tokens as sent (0: not sent).
	RequestedOutputTokens int `json:"requested_output_tokens,omitempty"`
	// TTFA is the time to first answer token: from t_send to the first chunk with non-empty
	// answer content (not reasoning content). 0 when no reasoning content came first (TTFA is
	// then TTFT) or no answer came.
	TTFA time.Duration `json:"ttfa_ns,omitempty"`
	// ReasoningChunks counts the content chunks that carried reasoning content only.
	ReasoningChunks int `json:"reasoning_chunks,omitempty"`
	// ReasoningTokens is usage.completion_tokens_details.reasoning_tokens (0: not reported).
	ReasoningTokens int `json:"reasoning_tokens,omitempty"`
	// UsageOutputTokens and UsagePromptTokens keep the usage the server reported when it was not
	// believed (TokensNote says why; OutputTokens is then the chunk count, PromptTokens the
	// requested length). 0 when the usage was believed or absent.
	UsageOutputTokens int64 `json:"usage_output_tokens,omitempty"`
	UsagePromptTokens int64 `json:"usage_prompt_tokens,omitempty"`
	// CachedTokens is usage.prompt_tokens_details.cached_tokens: the prompt tokens the server's
	// prefix cache had (OpenAI; vLLM with --enable-prompt-tokens-details; SGLang). nil when
	// the server did not report it (absent), never confused with a reported 0.
	CachedTokens *int `json:"cached_tokens,omitempty"`
	// TokensNote says why the server's usage was not believed.
	TokensNote string `json:"tokens_note,omitempty"`
	// Retried reports that the request was sent a second time on a fresh connection because
	// its reused connection failed before any response byte (the server had closed a
	// keep-alive connection); it is not a server error.
	Retried bool `json:"retried,omitempty"`
	// Scheduled is t_scheduled, Unix nanoseconds, on an arrival-rate (open-loop) level
	// (LevelRun.OfferedRPS > 0): the arrival time the level's schedule gave the request,
	// whether or not the client could send it then. Sent − Scheduled ≥ 0 is its schedule lag:
	// the client's lateness plus any wait for a free place under max_concurrency. Latencies
	// from the scheduled time (the user's view) are TTFT + lag and E2E + lag; the window's
	// arrivals, the latency population of a rate level, are the requests scheduled inside it
	// (DESIGN §1). A request cancelled before it could be sent keeps its Scheduled, has Sent =
	// the moment it was cancelled, E2E 0 and status cancelled. 0 on a closed-loop level,
	// whose requests have no schedule.
	Scheduled int64 `json:"scheduled_unix_ns,omitempty"`
	// Session identifies the conversation of a multi-turn request (workload.sessions):
	// "LEVEL.WORKER.CONVERSATION", unique within the run; empty when not a session.
	Session string `json:"session,omitempty"`
	// Turn is the request's turn in its conversation, from 1; 0 when not a session.
	Turn int `json:"turn,omitempty"`
	// Pause is the pause a closed-loop worker took before sending this request, as it asked
	// for it: its think time (workload.think_time, a session's pauses) and a connect error's
	// backoff; 0 for a worker's first request of the level. The client's turnaround before the
	// request is the rest of the gap since the worker's previous request ended (DESIGN §3.3).
	Pause time.Duration `json:"pause_ns,omitempty"`
	// SlotWait is, on an arrival-rate level, the time the arrival waited for a free place
	// under max_concurrency (the cap's queue, not the client's lateness; DESIGN §3.9); 0 when
	// a place was free.
	SlotWait time.Duration `json:"slot_wait_ns,omitempty"`
	// ReadLag summarises the read lag of the request's content chunks (DESIGN §3.3): nil when
	// its connection had no kernel receive timestamps (not Linux, setsockopt refused).
	ReadLag *ReadLag `json:"read_lag,omitempty"`
	// TTFTKernel is TTFT as the kernel saw it (DESIGN §3.3): the kernel's receive timestamp of
	// the read that gave the first content chunk − t_send (Sent), both on the wall clock; it
	// leaves out the client's read lag of that chunk. 0 (absent) when that read had no kernel
	// timestamp.
	TTFTKernel time.Duration `json:"ttft_kernel_ns,omitempty"`

	// The kernel's clock (DESIGN §3.3). Clock is ClockKernel when Sent, TTFT, TTFA, E2E,
	// Chunks, ChunksTail and ITL are on the kernel's clock: Sent the send of the request's
	// last byte (SendStamp says how it was taken), the others from the kernel's receive
	// timestamp of the read that delivered each content chunk. Empty: the client's clock,
	// as before (another OS, no timestamps, an unstamped first content chunk, no response).
	Clock     string `json:"clock,omitempty"`
	SendStamp string `json:"send_stamp,omitempty"`
	// ClientSent, ClientTTFT and ClientE2E are t_send (Unix ns), TTFT and E2E on the client's
	// clock, for comparison, on a kernel record; absent on a client record (Sent, TTFT and
	// E2E are then the client's).
	ClientSent int64         `json:"client_sent_unix_ns,omitempty"`
	ClientTTFT time.Duration `json:"client_ttft_ns,omitempty"`
	ClientE2E  time.Duration `json:"client_e2e_ns,omitempty"`
	// End is the time from Sent to the last byte the request read, on the record's clock: the
	// kernel's arrival of the [DONE] line or of the body's end (a synchronous drain) on a
	// kernel record that ended with [DONE]; else the client's clock when the request let go of
	// the connection. 0 when unknown (a record from before).
	End time.Duration `json:"end_ns,omitempty"`
	// Dialed reports that the answered attempt's connection was newly dialled (not reused);
	// Setup is the connection set-up before Sent that the server forced: the dial (ConnWait)
	// when Dialed, plus, when Retried, the failed attempt on the connection the server had
	// closed. 0 on a reused connection.
	Dialed bool          `json:"dialed,omitempty"`
	Setup  time.Duration `json:"setup_ns,omitempty"`
	// FirstGather counts the content chunks after the first that arrived with the first's
	// kernel timestamp (delivered by the same read): the kernel's clock cannot order them.
	FirstGather int `json:"first_gather,omitempty"`
	// Model is the model the request named when the workload mixes models
	// (workload.models); empty when it named the target's one model.
	Model string `json:"model,omitempty"`
	// Inputs is the number of inputs an embeddings request carried (workload.batch); 0 for
	// the streaming APIs.
	Inputs int `json:"inputs,omitempty"`
	// RetryAfter is the wait the server asked for with a Retry-After header on a 429 or 503
	// answer (capped at MaxRetryAfter); the worker's next request waits at least that long
	// (DESIGN §3.2). 0 when the answer had none.
	RetryAfter time.Duration `json:"retry_after_ns,omitempty"`
}

// MaxRetryAfter caps the Retry-After a worker honours: a longer one (a day, an HTTP date far
// ahead) would idle the level, whose window ends it anyway.
const MaxRetryAfter = time.Minute

// Record clocks and send stamps (Record.Clock, Record.SendStamp; DESIGN §3.3).
const (
	// ClockKernel: the record's latencies are on the kernel's clock.
	ClockKernel = "kernel"
	// SendTX: Sent is the kernel's software transmit timestamp of the request's last byte.
	SendTX = "tx"
	// SendWrite: Sent is the client's clock right after the write of the request's last
	// byte returned.
	SendWrite = "write"
)

// KernelClock reports whether r's latencies are on the kernel's clock.
func (r *Record) KernelClock() bool { return r.Clock == ClockKernel }

// ITLSummary summarises the inter-chunk gaps of one request, in microseconds, when per-chunk
// arrival times are not recorded.
type ITLSummary struct {
	// Count is the number of gaps.
	Count int `json:"count"`
	// SumUS is the sum of the gaps.
	SumUS int64 `json:"sum_us"`
	// MaxUS is the largest gap.
	MaxUS int64 `json:"max_us"`
}

// Done reports the Unix nanosecond time the request ended (t_send + E2E).
func (r *Record) Done() int64 { return r.Sent + int64(r.E2E) }

// Arrival reports the request's arrival time, Unix nanoseconds: Scheduled on an arrival-rate
// level, Sent on a closed-loop one (no schedule).
func (r *Record) Arrival() int64 {
	if r.Scheduled != 0 {
		return r.Scheduled
	}
	return r.Sent
}

// Lag reports the lag Sent − Scheduled: 0 without a schedule, never negative. It is what a
// latency from the scheduled time adds to one from the send time (the user's wait before the
// request was on the wire: the client's lateness, any wait under max_concurrency and the
// connection's dial).
func (r *Record) Lag() time.Duration {
	if r.Scheduled == 0 || r.Sent < r.Scheduled {
		return 0
	}
	return time.Duration(r.Sent - r.Scheduled)
}

// StartLag reports the schedule lag proper, Sent − ConnWait − Scheduled: how late the client
// started the request (its own lateness and any wait under max_concurrency), without the time
// the connection took, which is the server's and the network's. 0 without a schedule, never
// negative. It is the schedule_lag_ms a rate level is judged by (DESIGN §4.15).
func (r *Record) StartLag() time.Duration {
	if r.Scheduled == 0 {
		return 0
	}
	return max(0, time.Duration(r.Sent-r.Scheduled)-r.ConnWait)
}

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Status == StatusOK }

// Yield is the tokens the request brings to the window's throughput (TokensInWindow) when
// it CountsTokens: its OutputTokens, or, for an embeddings request (Inputs > 0), which has no output, the
// PromptTokens it embedded.
func (r *Record) Yield() int {
	if r.Inputs > 0 {
		return r.PromptTokens
	}
	return r.OutputTokens
}

// Waited is the latency a request is watched by for a queue that grows (DESIGN §4.17): its
// TTFT, or, for an embeddings request (Inputs > 0), whose answer arrives whole, its E2E.
func (r *Record) Waited() time.Duration {
	if r.Inputs > 0 {
		return r.E2E
	}
	return r.TTFT
}

// UserCancelled reports whether the workload closed the stream early on purpose
// (workload.cancel): not an error, its tokens count toward throughput.
func (r *Record) UserCancelled() bool {
	return r.Status == StatusCancelled && r.ErrorClass == ErrUserCancel
}

// Level is one finished level of a sweep: how it ran and every request it sent (warmup,
// measure and drain phases). It is what the controller hands to the Sink, the Judge and the
// Refiner, and what a results directory holds per level.
type Level struct {
	Run     LevelRun
	Records []Record
}

// GroupRecords pairs each run with its records (Record.Level == LevelRun.Index), in the order
// of runs. Records of levels not in runs are dropped; a second run with the same index gets
// no records.
func GroupRecords(runs []LevelRun, records []Record) []Level {
	pos := make(map[int]int, len(runs))
	out := make([]Level, len(runs))
	for i, r := range runs {
		out[i].Run = r
		if _, dup := pos[r.Index]; !dup {
			pos[r.Index] = i
		}
	}
	for _, r := range records {
		if i, ok := pos[r.Level]; ok {
			out[i].Records = append(out[i].Records, r)
		}
	}
	return out
}

// Runs returns the LevelRun of each level.
func Runs(levels []Level) []LevelRun {
	out := make([]LevelRun, len(levels))
	for i := range levels {
		out[i] = levels[i].Run
	}
	return out
}

// LevelRun describes how one level ran: its phase boundaries as Unix nanoseconds and the
// steady-state verdict. It is the line format of levels.json's "levels" array.
type LevelRun struct {
	// Index is the 0-based index of the level in the plan.
	Index int `json:"index"`
	// Concurrency is the target concurrency (number of workers).
	Concurrency int `json:"concurrency"`
	// WarmupStart is when the first worker started.
	WarmupStart int64 `json:"warmup_start_unix_ns"`
	// W0 and W1 bound the measurement window [W0, W1).
	W0 int64 `json:"w0_unix_ns"`
	W1 int64 `json:"w1_unix_ns"`
	// DrainEnd is when the last in-flight request of the level ended.
	DrainEnd int64 `json:"drain_end_unix_ns"`
	// Steady is the steady-state verdict of the measurement window.
	Steady bool `json:"steady"`
	// NotSteadyReason says why Steady is false: the steady-state test failed, too few
	// completions (min_requests), a window shorter than duration, or an interruption.
	NotSteadyReason string `json:"not_steady_reason,omitempty"`
	// Slices is the number of equal slices of the window the steady-state test used.
	Slices int `json:"slices"`
	// SliceTPS is the output tokens/s of each slice.
	SliceTPS []float64 `json:"slice_tps,omitempty"`
	// CIHalfWidth is the 95% CI half-width of the mean slice TPS, relative to the mean.
	CIHalfWidth float64 `json:"ci_half_width_rel"`
	// TrendP is the p-value of the linear trend across slices.
	TrendP float64 `json:"trend_p"`
	// CITarget is the CI half-width the window was held to: ci_target, or more when its
	// requests vary too much in speed to resolve that (CITarget, DESIGN §3.2); 0 in a
	// levels.json from before the key.
	CITarget float64 `json:"ci_target,omitempty"`
	// Imprecise reports a level not steady only for precision: at max_duration its TPS had no
	// material trend but its CI half-width was above CITarget or it had fewer than
	// min_requests completions. Steady stays false; its numbers stand with the CI they
	// reached and the analysis keeps it, flagged (DESIGN §3.2, §4.1).
	Imprecise bool `json:"imprecise,omitempty"`
	// TTFTTrend is the fitted change of TTFT across the window relative to its mean (OLS of
	// the TTFT of the window's successful requests on their send times), TTFTTrendP its
	// two-sided p-value; LatencyRising reports a significant rise above LatencyRiseMin: a
	// queue still growing, evidence of overload (DESIGN §3.2, §4.4).
	TTFTTrend     float64 `json:"ttft_trend"`
	TTFTTrendP    float64 `json:"ttft_trend_p"`
	LatencyRising bool    `json:"latency_rising,omitempty"`
	// Cancelled counts in-flight requests cancelled at the drain timeout.
	Cancelled int `json:"cancelled"`
	// Interrupted reports that the sweep was interrupted during this level: W1 is the moment
	// of the interrupt, and the analysis treats the level as invalid.
	Interrupted bool `json:"interrupted,omitempty"`
	// Client is the load generator's self-diagnosis during the window (may be nil).
	Client *ClientStats `json:"client,omitempty"`
	// Server summarises scraped server metrics during the window (may be nil).
	Server *ServerStats `json:"server,omitempty"`
	// GPU is what the GPUs serving the target measured during the window (DESIGN §3.10);
	// nil when no GPU telemetry was read.
	GPU *GPUStats `json:"gpu,omitempty"`
	// Shard is set when the level was run by one shard of a sharded sweep: the records are
	// that shard's workers only, until `kneecap merge` combines the shards.
	Shard *ShardPart `json:"shard,omitempty"`
	// Clock is the shard's reading of its clock against the sweep's reference clock before
	// the level (DESIGN §8); nil when not a shard, or from a kneecap before the key.
	Clock *ClockOffset `json:"clock,omitempty"`
	// TokensPerChunkBound is the most tokens one content chunk was believed to carry when the
	// sweep checked the level's usage (ChunkBound, DESIGN §7), which `kneecap analyze` holds
	// its records to again; 0 in a levels.json from before the key.
	TokensPerChunkBound int `json:"tokens_per_chunk_bound,omitempty"`
	// Refine, on a level added after the planned ones (sweep.refine), says why it was added
	// and where: "SLO limit ≈ 41.3 between measured 32 and 64".
	Refine string `json:"refine,omitempty"`
	// RetryOf, on a level run again because it was excluded (sweep.retry_excluded), is the
	// index of the level it reruns, which it supersedes; Retry says why ("not steady: …",
	// "client-bound: …") and WindowScale is the factor its duration and max_duration were
	// multiplied by (2 on the first retry, 4 on a second).
	RetryOf     *int   `json:"retry_of,omitempty"`
	Retry       string `json:"retry,omitempty"`
	WindowScale int    `json:"window_scale,omitempty"`
	// OfferedRPS is the arrival rate an arrival-rate (open-loop) level offered, in requests/s
	// (its records carry Scheduled); 0 on a closed-loop level. On a rate level Concurrency is
	// the cap on requests in flight (max_concurrency, DefaultMaxConcurrency when that is 0:
	// never 0), not a number of workers.
	OfferedRPS float64 `json:"offered_rps,omitempty"`
	// TimeScale is a trace replay's time scale at this level (DESIGN §3.9): its arrivals are
	// the trace's times ÷ it (2 = twice the recorded traffic); 0 when not a trace replay.
	TimeScale float64 `json:"time_scale,omitempty"`
	// Arrivals and Shards, on an arrival-rate or trace level that `kneecap merge` joined from
	// shards, are how the merged send times fit the arrival process (nil on a trace level,
	// whose gaps are the trace's) and each shard's part (DESIGN §8).
	Arrivals *ArrivalFit `json:"arrivals,omitempty"`
	Shards   []ShardLag  `json:"shards,omitempty"`
	// Notes are warnings about this level (for example "not steady").
	Notes []string `json:"notes,omitempty"`
}

// Window returns the measurement window length.
func (l *LevelRun) Window() time.Duration { return time.Duration(l.W1 - l.W0) }

// ClientStats is the load generator's self-diagnosis over a measurement window.
type ClientStats struct {
	// CPUUtilization is process CPU time ÷ (wall time × GOMAXPROCS), in [0, 1]. With the
	// in-process simulator it includes the simulator's work (the process, not only the
	// client, was busy); SchedLatencyP99 is the client-side signal either way.
	CPUUtilization float64 `json:"cpu_utilization"`
	// SchedLatencyP99 is the p99 Go scheduling latency (runtime/metrics /sched/latencies).
	SchedLatencyP99 time.Duration `json:"sched_latency_p99_ns"`
	// ConnWaitP99 is the p99 of conn_wait over requests sent in the window.
	ConnWaitP99 time.Duration `json:"conn_wait_p99_ns"`
	// RunQueueDelay is the time the process's threads were runnable but waited for a CPU,
	// ÷ (wall time × GOMAXPROCS) (Linux schedstat; 0 elsewhere): high when other processes
	// starve the client.
	RunQueueDelay float64 `json:"run_queue_delay"`
	// ReadLagChunks is the number of the window's content chunks with a read lag (kernel
	// receive timestamps, DESIGN §3.3); 0 when none had one. ReadLagCoverage is their share of
	// the window's content chunks; ReadLagP50, ReadLagP99 and ReadLagMax their read lag
	// (quantiles interpolated within the histogram's bucket); ReadLagThreshold the p99 above
	// which the level is client-bound (max(4 ms, 20% of the level's ITL p50)).
	ReadLagChunks    int           `json:"read_lag_chunks,omitempty"`
	ReadLagCoverage  float64       `json:"read_lag_coverage,omitempty"`
	ReadLagP50       time.Duration `json:"read_lag_p50_ns,omitempty"`
	ReadLagP99       time.Duration `json:"read_lag_p99_ns,omitempty"`
	ReadLagMax       time.Duration `json:"read_lag_max_ns,omitempty"`
	ReadLagThreshold time.Duration `json:"read_lag_threshold_ns,omitempty"`
	// Effects are the estimates of how much the client's lateness can have moved each of the
	// level's numbers, each a fraction of the number (DESIGN §3.3): "ttft_p95", "tpot_p50",
	// "itl_p99", "e2e_p95" (on the kernel's clock: what it cannot see), on an arrival-rate
	// level "ttft_scheduled_p95" and "e2e_scheduled_p95" (the client's lateness behind the
	// schedule), and "offered_load" and "throughput"; absent when none was estimated.
	// Tolerance is the fraction above which one makes the level client-bound
	// (sweep.client_tolerance).
	Effects   map[string]float64 `json:"effects,omitempty"`
	Tolerance float64            `json:"tolerance,omitempty"`
	// DialShare is the share of the window's requests whose connection was newly dialled
	// (Record.Dialed) and DialP99 their set-up's p99: the server's doing when it closes
	// connections; it never makes a level client-bound.
	DialShare float64       `json:"dial_share,omitempty"`
	DialP99   time.Duration `json:"dial_p99_ns,omitempty"`
	// Bound reports whether the client's effect on some number exceeded Tolerance (or, without
	// kernel timestamps, a heuristic threshold).
	Bound bool `json:"bound"`
	// Reason says which threshold made it bound.
	Reason string `json:"reason,omitempty"`
	// Evidence says what decided Bound: "read_lag" when the read lag covers the window
	// (ReadLagCoverageMin of its chunks), else "heuristics" (CPU, scheduling latency,
	// run-queue wait). conn_wait decides under either.
	Evidence string `json:"evidence,omitempty"`
	// Note, when the read lag decided, quotes the heuristics that were over their thresholds:
	// supporting evidence only ("machine busy: …; read lag p99 …: the client kept up").
	Note string `json:"note,omitempty"`
}

// ServerStats summarises server metrics (vLLM, SGLang, llama.cpp) scraped during a window.
// NaN-free: a quantity none of whose series the server exposed reads 0, and Exposes says so.
type ServerStats struct {
	// Samples is the number of scrapes inside the window.
	Samples int `json:"samples"`
	// MeanRunning is the mean number of running requests.
	MeanRunning float64 `json:"mean_running"`
	// MaxRunning is the largest number of running requests seen.
	MaxRunning float64 `json:"max_running"`
	// MeanWaiting is the mean number of waiting (queued) requests.
	MeanWaiting float64 `json:"mean_waiting"`
	// MaxWaiting is the largest number of waiting requests seen.
	MaxWaiting float64 `json:"max_waiting"`
	// WaitingGrowthRPS is the least-squares slope of the waiting count over the window's
	// samples, in requests/s, and WaitingResidSD the samples' standard deviation around that
	// line, in requests (DESIGN §3.7): a queue the server cannot work off grows. Nil with fewer
	// than 3 samples of the waiting count in the window.
	WaitingGrowthRPS *float64 `json:"waiting_growth_rps,omitempty"`
	WaitingResidSD   *float64 `json:"waiting_resid_sd,omitempty"`
	// MaxKVUsage is the largest KV-cache usage seen, in [0, 1].
	MaxKVUsage float64 `json:"max_kv_usage"`
	// Preemptions is the increase of the preemption counter over the window.
	Preemptions float64 `json:"preemptions"`
	// PrefixCacheHitRate is the prefix-cache hit rate over the window in [0, 1], measured as
	// PrefixCacheSource says ("counters": the hit counter's increase ÷ the query counter's,
	// in tokens; "gauge": the mean of a hit-rate gauge); nil and no source when not measured.
	// Read it with PrefixCacheRate (an older levels.json left a measured 0 out).
	PrefixCacheHitRate *float64 `json:"prefix_cache_hit_rate,omitempty"`
	PrefixCacheSource  string   `json:"prefix_cache_source,omitempty"`
	// PrefixCacheHits and PrefixCacheQueries are the increases of the prefix-cache counters
	// over the window, in tokens (vLLM V1; 0 without them).
	PrefixCacheHits    float64 `json:"prefix_cache_hits,omitempty"`
	PrefixCacheQueries float64 `json:"prefix_cache_queries,omitempty"`
	// Series lists the metric names that were found.
	Series []string `json:"series,omitempty"`
}

// Evidence names what decided ClientStats.Bound.
const (
	// EvidenceEstimates: the client-effect estimates decided, the latencies on the kernel's
	// clock (DESIGN §3.3).
	EvidenceEstimates = "estimates"
	// EvidenceReadLag: the read lag decided (levels.json from before the estimates).
	EvidenceReadLag = "read_lag"
	// EvidenceHeuristics: CPU, scheduling latency and run-queue wait decided (no kernel
	// timestamps).
	EvidenceHeuristics = "heuristics"
)
