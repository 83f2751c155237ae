package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults of the embedding engine (Embed's zero fields).
const (
	defaultEmbedBatch     = 32
	defaultEmbedStepBase  = time.Millisecond
	defaultEmbedPerToken  = 5 * time.Microsecond
	defaultEmbedDimension = 8
)

// embedBehind is how far behind its schedule the embedding engine may fall before it
// restarts the schedule from now (as the batching engine does).
const embedBehind = 50 * time.Millisecond

// Embed is the embedding engine of POST /v1/embeddings: an encoder that runs forward passes
// over batches of inputs, FCFS, at most Batch inputs a pass, each pass taking StepBase +
// PerToken × (the pass's input tokens). Saturated with inputs of L tokens it embeds
// Batch·L ÷ (StepBase + Batch·L·PerToken) input tokens a second (embedTPS). Zero fields take
// the defaults (32 inputs, 1 ms, 5 µs a token, 8 dimensions).
type Embed struct {
	// Batch is the most inputs one forward pass embeds.
	Batch int `yaml:"batch" json:"batch,omitempty"`
	// StepBase is the fixed cost of one forward pass.
	StepBase time.Duration `yaml:"step_base" json:"step_base_ns,omitempty"`
	// PerToken is the added cost of one forward pass per input token it embeds.
	PerToken time.Duration `yaml:"per_token" json:"per_token_ns,omitempty"`
	// Dimension is the length of each embedding vector.
	Dimension int `yaml:"dimension" json:"dimension,omitempty"`
}

// resolved returns e with its zero fields set to the defaults.
func (e Embed) resolved() Embed {
	over0 := func(v *int, def int) {
		if *v == 0 {
			*v = def
		}
	}
	over0(&e.Batch, defaultEmbedBatch)
	over0(&e.Dimension, defaultEmbedDimension)
	if e.StepBase == 0 {
		e.StepBase = defaultEmbedStepBase
	}
	if e.PerToken == 0 {
		e.PerToken = defaultEmbedPerToken
	}
	return e
}

// validate reports the problems of e (negative fields).
func (e Embed) validate() error {
	var errs []error
	if e.Batch < 0 || e.Dimension < 0 || e.Dimension > 1<<16 {
		errs = append(errs, fmt.Errorf("sim: embed: batch %d and dimension %d must be ≥ 0 (0 = the default), dimension at most 65536", e.Batch, e.Dimension))
	}
	if e.StepBase < 0 || e.PerToken < 0 {
		errs = append(errs, fmt.Errorf("sim: embed: step_base %v and per_token %v must be ≥ 0 (0 = the default)", e.StepBase, e.PerToken))
	}
	return errors.Join(errs...)
}

// embedTPS is the embedding engine's plateau: the input tokens a second it embeds when every
// pass is full of inputs of tokens tokens each (its ground truth for a sweep of such inputs).
func (e Embed) embedTPS(tokens int) float64 {
	r := e.resolved()
	pass := float64(r.Batch * tokens)
	return pass / (r.StepBase.Seconds() + pass*r.PerToken.Seconds())
}

// embedJob is one embeddings request in the engine: done closes when its last input's pass
// ends; gone marks a request whose client left (its inputs still queued are skipped). It is
// waiting until a pass takes its first input, then running until it ends (finished).
type embedJob struct {
	left              int // inputs not yet embedded, guarded by embedEngine.mu
	started, finished bool
	done              chan struct{}
	gone              atomic.Bool
}

// embedInput is one queued input.
type embedInput struct {
	job     *embedJob
	tokens  int
	arrived time.Time
}

// embedEngine runs the forward passes in one goroutine against an absolute schedule: a
// pass starts at the later of the previous pass's scheduled end and the arrival of its
// latest input, so timer jitter does not accumulate as lost throughput.
type embedEngine struct {
	cfg   Embed // resolved
	mu    sync.Mutex
	queue []embedInput
	// running and waiting count the requests (embedJob) a pass has started and those it has
	// not, for /metrics; guarded by mu.
	running, waiting int
	// passes counts the forward passes run.
	passes atomic.Int64
	wake   chan struct{} // one slot: work was queued
	stop   <-chan struct{}
	done   chan struct{}
}

// newEmbedEngine starts the engine; it ends when stop closes (done then closes).
func newEmbedEngine(cfg Embed, stop <-chan struct{}) *embedEngine {
	e := &embedEngine{cfg: cfg.resolved(), wake: make(chan struct{}, 1), stop: stop, done: make(chan struct{})}
	go e.run()
	return e
}

// submit queues one request of inputs of the given token counts, arrived at now.
func (e *embedEngine) submit(tokens []int, now time.Time) *embedJob {
	j := &embedJob{left: len(tokens), done: make(chan struct{})}
	e.mu.Lock()
	e.waiting++
	for _, n := range tokens {
		e.queue = append(e.queue, embedInput{job: j, tokens: n, arrived: now})
	}
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}
	return j
}

// take removes the next pass's inputs from the queue: at most Batch, FCFS, skipping those of
// requests whose client left.
func (e *embedEngine) take(pass []embedInput) []embedInput {
	e.mu.Lock()
	defer e.mu.Unlock()
	i := 0
	for ; i < len(e.queue) && len(pass) < e.cfg.Batch; i++ {
		in := e.queue[i]
		if in.job.gone.Load() {
			continue
		}
		if !in.job.started {
			in.job.started = true
			e.waiting--
			e.running++
		}
		pass = append(pass, in)
	}
	e.queue = append(e.queue[:0], e.queue[i:]...)
	return pass
}

// run is the engine loop.
func (e *embedEngine) run() {
	defer close(e.done)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	var due time.Time
	var pass []embedInput
	for {
		pass = e.take(pass[:0])
		if len(pass) == 0 {
			select {
			case <-e.wake:
				continue
			case <-e.stop:
				return
			}
		}
		e.passes.Add(1)
		start, tokens := due, 0
		for _, in := range pass {
			start = latest(start, in.arrived)
			tokens += in.tokens
		}
		if now := time.Now(); now.Sub(start) > embedBehind {
			start = now
		}
		due = start.Add(e.cfg.StepBase + time.Duration(tokens)*e.cfg.PerToken)
		timer.Reset(time.Until(due))
		select {
		case <-timer.C:
		case <-e.stop:
			return
		}
		e.mu.Lock()
		for _, in := range pass {
			if in.job.left--; in.job.left == 0 {
				e.end(in.job)
				close(in.job.done)
			}
		}
		e.mu.Unlock()
	}
}

// end counts j out of the running or waiting requests, once; the caller holds mu.
func (e *embedEngine) end(j *embedJob) {
	if j.finished {
		return
	}
	j.finished = true
	if j.started {
		e.running--
	} else {
		e.waiting--
	}
}

// leave ends j, whose client went away: its inputs still queued are skipped.
func (e *embedEngine) leave(j *embedJob) {
	j.gone.Store(true)
	e.mu.Lock()
	e.end(j)
	e.mu.Unlock()
}

// counts returns the running and waiting embeddings requests.
func (e *embedEngine) counts() (running, waiting int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running, e.waiting
}

// latest returns the later of a and b.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// embedRequest is the body of POST /v1/embeddings: input is a string, an array of strings,
// an array of token ids or an array of such arrays (the OpenAI API reference,
// https://platform.openai.com/docs/api-reference/embeddings/create).
type embedRequest struct {
	Model string          `json:"model"`
	Input json.RawMessage `json:"input"`
}

// embedOut is the answer: one embedding per input, in order, and the usage.
type embedOut struct {
	Object string      `json:"object"`
	Data   []embedding `json:"data"`
	Model  string      `json:"model"`
	Usage  *embedUsage `json:"usage,omitempty"`
}

// embedding is one entry of embedOut.Data.
type embedding struct {
	Object    string    `json:"object"`
	Index     int       `json:"index"`
	Embedding []float64 `json:"embedding"`
}

// embedUsage is an embeddings answer's usage: prompt_tokens = total_tokens.
type embedUsage struct {
	PromptTokens int64 `json:"prompt_tokens"`
	TotalTokens  int64 `json:"total_tokens"`
}

// embeddings serves POST /v1/embeddings: the inputs are counted in the server's tokens (no
// chat template), queued for the embedding engine, and answered once the last of them is
// embedded. faults.error_rate answers 500, faults.usage_prompt_tokens replaces the count
// reported and faults.omit_usage reports none, as for the streaming APIs.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	arrived := time.Now()
	var er embedRequest
	if !decodeBody(w, r, &er) || !s.servesModel(w, er.Model) {
		return
	}
	texts, tokens, err := s.cfg.embedInputs(er.Input)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	seq := s.seq.Add(1)
	if f := s.cfg.Faults; f.ErrorRate > 0 && uniform(s.cfg.Seed, seq, saltError) < f.ErrorRate {
		writeError(w, http.StatusInternalServerError, "InternalServerError", "injected fault: internal server error")
		return
	}
	job := s.embed.submit(tokens, arrived)
	select {
	case <-job.done:
	case <-r.Context().Done():
		s.embed.leave(job)
		return
	case <-s.stop:
		s.embed.leave(job)
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server is shutting down")
		return
	}
	out := embedOut{Object: "list", Model: s.cfg.Model, Data: make([]embedding, len(texts))}
	total := 0
	for i, t := range texts {
		out.Data[i] = embedding{Object: "embedding", Index: i, Embedding: s.embedVector(t)}
		total += tokens[i]
	}
	if f := s.cfg.Faults; !f.OmitUsage {
		out.Usage = &embedUsage{PromptTokens: int64(total)}
		if f.UsagePromptTokens != nil {
			out.Usage.PromptTokens = *f.UsagePromptTokens
		}
		out.Usage.TotalTokens = out.Usage.PromptTokens
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// embedInputs reads an embeddings request's input: the texts (a token-id input's text is its
// ids' JSON) and each one's tokens, in the server's tokens without a chat template. Empty
// inputs and inputs over the context limit are refused, as vLLM refuses them.
func (c *Config) embedInputs(raw json.RawMessage) (texts []string, tokens []int, err error) {
	var one string
	var many []string
	var ids []int
	var idLists [][]int
	switch {
	case json.Unmarshal(raw, &one) == nil:
		texts = []string{one}
	case json.Unmarshal(raw, &many) == nil:
		texts = many
	case json.Unmarshal(raw, &ids) == nil:
		idLists = [][]int{ids}
	case json.Unmarshal(raw, &idLists) == nil:
	default:
		return nil, nil, errors.New("input must be a string, an array of strings, or token ids")
	}
	for _, l := range idLists {
		b, _ := json.Marshal(l)
		texts, tokens = append(texts, string(b)), append(tokens, len(l))
	}
	if len(idLists) == 0 {
		for _, t := range texts {
			tokens = append(tokens, c.Tokenizer.Count(t))
		}
	}
	if len(texts) == 0 {
		return nil, nil, errors.New("input must not be empty")
	}
	for i, n := range tokens {
		switch l := c.contextLimit(); {
		case n == 0:
			return nil, nil, fmt.Errorf("input[%d] is empty", i)
		case l > 0 && n > l:
			return nil, nil, fmt.Errorf("input[%d] has %d tokens, more than the maximum context length %d", i, n, l)
		}
	}
	return texts, tokens, nil
}

// embedVector is text's embedding: a deterministic unit vector of the configured dimension
// drawn from the text's hash and the seed.
func (s *Server) embedVector(text string) []float64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(text))
	key := h.Sum64()
	v := make([]float64, s.embed.cfg.Dimension)
	norm := 0.0
	for i := range v {
		v[i] = 2*uniform(s.cfg.Seed, key, uint64(i)) - 1
		norm += v[i] * v[i]
	}
	norm = math.Sqrt(norm)
	if norm == 0 {
		return v
	}
	for i := range v {
		v[i] = math.Round(v[i]/norm*1e6) / 1e6
	}
	return v
}

// String describes a configured embedding engine for the server's banner (" embed=…"), ""
// when every field is the default's.
func (e Embed) String() string {
	if e == (Embed{}) {
		return ""
	}
	r := e.resolved()
	return fmt.Sprintf(" embed=%d inputs a pass of %v + %v×tokens, %d dimensions", r.Batch, r.StepBase, r.PerToken, r.Dimension)
}
