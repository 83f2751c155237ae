package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

type apiKind int

const (
	apiChat apiKind = iota
	apiCompletions
)

// genRequest is the subset of the OpenAI (and vLLM) request body the simulator honours.
// Unknown fields are ignored, as vLLM does.
type genRequest struct {
	Model               string          `json:"model"`
	Messages            []chatMessage   `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	// The Responses API's prompt and output cap (asChat moves them to Messages and MaxTokens).
	Input           json.RawMessage `json:"input"`
	MaxOutputTokens *int            `json:"max_output_tokens"`
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// plan is what the server decided for one accepted request.
type plan struct {
	seq          uint64
	kind         apiKind
	wire         apiKind // the API whose events the stream writes (kind is the engine's: chat for responses and messages)
	prompt       int
	outputTokens int
	reasoning    int    // the first tokens of the output that are reasoning (chat only)
	finish       string // "length" or "stop"
	stream       bool
	includeUsage bool
	disconnectAt int // cut the stream once this many tokens are sent; -1 = never
	stallAt      int // stall once this many tokens are sent; -1 = never
	created      int64
	arrived      time.Time     // when the handler started; fixed mode's TTFT counts from here, or from admission to a slot
	prefix       *prefixPrompt // prefix-caching state; nil when caching is off or in fixed mode
	model        string        // the model served: the request's, or the base model when it names none
	slowdown     float64       // the cost of the model's tokens relative to the base model's (adapters.go)
}

// badRequest writes a 400 BadRequestError.
func badRequest(w http.ResponseWriter, format string, args ...any) {
	writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(format, args...))
}

// decodeBody reads r's JSON body into v; on an error it answers 400 and returns false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	if err := dec.Decode(v); err != nil {
		badRequest(w, "invalid JSON body: %v", err)
		return false
	}
	return true
}

// servesModel reports whether the server serves model ("" names none), the base model or an
// adapter; when it does not, it answers 404 as vLLM does.
func (s *Server) servesModel(w http.ResponseWriter, model string) bool {
	if _, ok := s.cfg.served(model); model != "" && !ok {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", model))
		return false
	}
	return true
}

// generate serves /v1/chat/completions, /v1/completions, /v1/responses and /v1/messages.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, kind apiKind) {
	arrived := time.Now()
	var g genRequest
	if !decodeBody(w, r, &g) || !s.servesModel(w, g.Model) {
		return
	}
	wire := kind
	kind, ok := asChat(w, &g, kind)
	if !ok {
		return
	}
	prompt, prefix, err := s.prompt(&g, kind)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	capTok, ok := s.outputCap(w, &g, prompt)
	if !ok {
		return
	}
	seq := s.seq.Add(1)
	if s.injectedFault(w, r, seq, kind, wire) {
		return
	}
	p := plan{seq: seq, kind: kind, wire: wire, prompt: prompt, stream: g.Stream, created: arrived.Unix(), arrived: arrived, disconnectAt: -1, stallAt: -1,
		prefix: prefix, model: s.cfg.Model, slowdown: 1}
	s.planOutput(&p, &g, capTok)

	src := s.newSource(&p)
	defer src.release()
	if err := src.start(r.Context()); err != nil {
		if errors.Is(err, errStopped) {
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server is shutting down")
		}
		return
	}
	if p.stream {
		s.streamResponse(w, r, &p, src)
		return
	}
	s.plainResponse(r.Context(), w, &p, src)
}

// outputCap checks the request's lengths (max_tokens or max_completion_tokens ≥ 1,
// min_tokens ≥ 0, the prompt and max_tokens within the context limit) and returns the cap on
// its output tokens (0 = none: max_tokens, else the context left after the prompt); on a
// problem it answers 400 as vLLM does and returns false.
func (s *Server) outputCap(w http.ResponseWriter, g *genRequest, prompt int) (int, bool) {
	maxTok := g.MaxTokens
	if maxTok == nil {
		maxTok = g.MaxCompletionTokens
	}
	if maxTok != nil && *maxTok < 1 {
		badRequest(w, "max_tokens must be at least 1, got %d", *maxTok)
		return 0, false
	}
	if g.MinTokens < 0 {
		badRequest(w, "min_tokens must be at least 0, got %d", g.MinTokens)
		return 0, false
	}
	limit := s.cfg.contextLimit()
	capTok := 0 // 0 = no cap
	if maxTok != nil {
		capTok = *maxTok
	}
	if limit > 0 {
		if maxTok != nil && prompt+*maxTok > limit {
			badRequest(w, "This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the messages, %d in the completion). Please reduce the length of the messages or completion.",
				limit, prompt+*maxTok, prompt, *maxTok)
			return 0, false
		}
		if maxTok == nil {
			if prompt >= limit {
				badRequest(w, "This model's maximum context length is %d tokens. However, your prompt has %d tokens. Please reduce the length of the prompt.", limit, prompt)
				return 0, false
			}
			capTok = limit - prompt
		}
	}
	return capTok, true
}

// injectedFault answers request seq with an injected fault when one is drawn (faults:
// error_rate's 500, queue_limit_429's 429) and reports whether it did.
func (s *Server) injectedFault(w http.ResponseWriter, r *http.Request, seq uint64, kind, wire apiKind) bool {
	f := s.cfg.Faults
	if f.ErrorRate > 0 && uniform(s.cfg.Seed, seq, saltError) < f.ErrorRate {
		if wire != kind {
			s.injectedStreamError(w, r, wire, "injected fault: internal server error")
			return true
		}
		writeError(w, http.StatusInternalServerError, "InternalServerError", "injected fault: internal server error")
		return true
	}
	if f.QueueLimit429 > 0 && s.Stats().Waiting > f.QueueLimit429 {
		if f.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.FormatInt(int64((f.RetryAfter+time.Second-1)/time.Second), 10))
		}
		writeAPIError(w, wire, http.StatusTooManyRequests, "RateLimitError", fmt.Sprintf("injected fault: waiting queue longer than %d", f.QueueLimit429))
		return true
	}
	return false
}

// planOutput fills in p what the request's output will be: its model and slowdown, its
// length (drawn, or forced by ignore_eos and min_tokens, capped at capTok) and finish reason,
// its reasoning tokens, and where a drawn disconnect or stall fault strikes.
func (s *Server) planOutput(p *plan, g *genRequest, capTok int) {
	f, seq := s.cfg.Faults, p.seq
	if g.Model != "" {
		p.model = g.Model
		p.slowdown, _ = s.cfg.served(g.Model)
	}
	p.includeUsage = g.StreamOptions != nil && g.StreamOptions.IncludeUsage
	n := outputLength(s.cfg.OutputDist, s.cfg.OutputTokens, s.cfg.Seed, seq)
	if g.IgnoreEOS || (capTok > 0 && g.MinTokens >= capTok) {
		if capTok > 0 {
			n = capTok
		}
	}
	n = max(n, g.MinTokens)
	p.finish = "stop"
	if capTok > 0 && n >= capTok {
		n, p.finish = capTok, "length"
	}
	p.outputTokens = n
	if p.kind == apiChat {
		p.reasoning = min(s.cfg.ReasoningTokens, n)
	}
	if f.DisconnectRate > 0 && uniform(s.cfg.Seed, seq, saltDisconnect) < f.DisconnectRate {
		p.disconnectAt = midpoint(s.cfg.Seed, seq, saltDisconnect, n)
	}
	if f.StallRate > 0 && uniform(s.cfg.Seed, seq, saltStall) < f.StallRate {
		p.stallAt = midpoint(s.cfg.Seed, seq, saltStall, n)
	}
}

// prompt counts the request's prompt tokens (promptTokens). With prefix caching in batching
// mode it also returns the prompt's ids and block hashes, computed here in the handler so
// that the engine goroutine only looks them up and inserts them, hashing nothing.
func (s *Server) prompt(g *genRequest, kind apiKind) (int, *prefixPrompt, error) {
	if s.eng == nil || s.eng.prefix == nil {
		n, err := s.cfg.promptTokens(g, kind)
		return n, nil, err
	}
	ids, err := s.cfg.promptIDs(g, kind)
	if err != nil {
		return 0, nil, err
	}
	return len(ids), rootedPrefixPrompt(ids, s.cfg.BlockSize, s.cfg.prefixRoot(g.Model)), nil
}

// midpoint draws a token position in [1, n−1] where a fault strikes (0 when n < 2).
func midpoint(seed int64, seq, salt uint64, n int) int {
	if n < 2 {
		return 0
	}
	return 1 + int(uniform(seed, seq, salt^saltWhere)*float64(n-1))
}

// source yields the tokens of one request as the engine generates them.
type source interface {
	// start hands the request to the engine.
	start(ctx context.Context) error
	// await blocks until at least need tokens exist and returns how many exist.
	await(ctx context.Context, need int) (int, error)
	// release frees the request (a client that left frees its slot).
	release()
}

func (s *Server) newSource(p *plan) source {
	if s.eng == nil {
		s.fixedPrompt.Add(int64(p.prompt))
		return &fixedSource{s: s, began: p.arrived, n: p.outputTokens, ttft: scaled(s.cfg.TTFT, p.slowdown), itl: scaled(s.cfg.ITL, p.slowdown)}
	}
	req := newRequest(p.seq, p.prompt, p.outputTokens)
	req.slowdown = p.slowdown
	if p.prefix != nil {
		req.blocks = p.prefix.hashes
		p.prefix.req = req
	}
	return &engineSource{s: s, req: req}
}

// engineSource reads tokens from the batching engine.
type engineSource struct {
	s         *Server
	req       *request
	submitted bool
}

func (e *engineSource) start(ctx context.Context) error {
	if e.submitted {
		return nil
	}
	e.req.left = ctx.Done() // set before the engine can see the request
	if err := e.s.eng.offer(ctx, e.s.stop, e.req); err != nil {
		return err
	}
	e.submitted = true
	return nil
}

func (e *engineSource) await(ctx context.Context, need int) (int, error) {
	if err := e.start(ctx); err != nil {
		return 0, err
	}
	for {
		if g := int(e.req.generated.Load()); g >= need {
			return g, nil
		}
		if err := wait(ctx, e.s.stop, e.req.notify); err != nil {
			return 0, err
		}
	}
}

func (e *engineSource) release() { e.req.gone.Store(true) }

// fixedSource makes token i (1-based) available at began + TTFT + (i−1) × ITL, began being
// the request's arrival, or the moment it got a slot when it had to wait for one. It is
// counted running (holding its slot) until its last token is due or its client leaves.
type fixedSource struct {
	s       *Server
	began   time.Time
	n       int
	ttft    time.Duration // the configured TTFT and ITL times the model's slowdown
	itl     time.Duration
	timer   *time.Timer
	ticket  *slotTicket // the claim on a slot; nil with unlimited slots
	started bool        // start ran
	owes    bool        // counted running or holding a claim, not yet freed
}

// start submits the request: with limited slots it claims one, queueing FCFS behind earlier
// claims when none is free (await waits for it), as the batching engine queues a request.
func (f *fixedSource) start(context.Context) error {
	if f.started {
		return nil
	}
	f.started, f.owes = true, true
	if q := f.s.fixedSlots; q != nil {
		f.ticket = q.take()
	} else {
		f.s.fixedAdd(1)
	}
	return nil
}

// admitted waits for the request's slot; its TTFT clock starts when it gets one.
func (f *fixedSource) admitted(ctx context.Context) error {
	if f.ticket == nil {
		return nil
	}
	if err := wait(ctx, f.s.stop, f.ticket.granted); err != nil {
		return err
	}
	if !f.ticket.at.IsZero() {
		f.began = f.ticket.at
	}
	return nil
}

func (f *fixedSource) await(ctx context.Context, need int) (int, error) {
	if err := f.start(ctx); err != nil {
		return 0, err
	}
	if err := f.admitted(ctx); err != nil {
		return 0, err
	}
	due := f.began.Add(f.ttft + time.Duration(need-1)*f.itl)
	if d := time.Until(due); d > 0 {
		if f.timer == nil {
			f.timer = time.NewTimer(d)
		} else {
			f.timer.Reset(d)
		}
		if err := wait(ctx, f.s.stop, f.timer.C); err != nil {
			return 0, err
		}
	}
	el := time.Since(f.began) - f.ttft
	avail := min(f.n, max(need, int(el/f.itl)+1))
	if avail == f.n {
		f.free() // the last token is due: the request is done with its slot
	}
	return avail, nil
}

// free stops counting the request: its slot passes to the next waiting request, or its
// claim leaves the queue.
func (f *fixedSource) free() {
	if !f.owes {
		return
	}
	f.owes = false
	if f.ticket != nil {
		f.s.fixedSlots.drop(f.ticket)
	} else {
		f.s.fixedAdd(-1)
	}
}

func (f *fixedSource) release() {
	if f.timer != nil {
		f.timer.Stop()
	}
	f.free()
}

type choiceOut struct {
	Index        int          `json:"index"`
	Message      *messageOut  `json:"message,omitempty"`
	Text         *string      `json:"text,omitempty"`
	Logprobs     *struct{}    `json:"logprobs"`
	FinishReason string       `json:"finish_reason"`
	StopReason   *json.Number `json:"stop_reason"`
}

type messageOut struct {
	Role             string  `json:"role"`
	Content          string  `json:"content"`
	ReasoningContent *string `json:"reasoning_content,omitempty"`
}

// plainResponse waits for the whole output and answers one JSON body.
func (s *Server) plainResponse(ctx context.Context, w http.ResponseWriter, p *plan, src source) {
	if p.stallAt >= 0 && !s.sleepCtx(ctx, s.cfg.Faults.StallDuration) {
		return
	}
	n, err := src.await(ctx, p.outputTokens)
	if err != nil {
		if errors.Is(err, errStopped) {
			writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server is shutting down")
		}
		return
	}
	if p.disconnectAt >= 0 {
		panic(http.ErrAbortHandler) // the deferred release frees the request
	}
	if s.eng == nil {
		s.fixedGen.Add(int64(n))
	}
	s.cacheOutput(p, n)
	text := strings.Repeat(answerText, n-p.reasoning)
	ch := choiceOut{FinishReason: p.finish}
	body := struct {
		ID      string      `json:"id"`
		Object  string      `json:"object"`
		Created int64       `json:"created"`
		Model   string      `json:"model"`
		Choices []choiceOut `json:"choices"`
		Usage   *usageOut   `json:"usage,omitempty"`
	}{Created: p.created, Model: p.model, Usage: s.cfg.reportedUsage(p, n)}
	if p.kind == apiChat {
		body.ID, body.Object = "chatcmpl-"+strconv.FormatUint(p.seq, 16), "chat.completion"
		ch.Message = &messageOut{Role: "assistant", Content: text}
		if s.cfg.ReasoningTokens > 0 {
			ch.Message.ReasoningContent = ptr(strings.Repeat(reasoningText, p.reasoning))
		}
	} else {
		body.ID, body.Object = "cmpl-"+strconv.FormatUint(p.seq, 16), "text_completion"
		ch.Text = &text
	}
	body.Choices = []choiceOut{ch}
	src.release() // finished before the client reads the answer (see streamResponse)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// scaled returns d times k (k ≥ 1: an adapter's slowdown), d itself for k ≤ 1.
func scaled(d time.Duration, k float64) time.Duration {
	if k <= 1 {
		return d
	}
	return time.Duration(float64(d) * k)
}
