package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// maxBodyBytes bounds a request body.
const maxBodyBytes = 32 << 20

// Server is the simulated engine behind an OpenAI-compatible HTTP API. It is an http.Handler;
// create it with NewServer and stop it with Close.
type Server struct {
	cfg     Config
	eng     *engine // nil in fixed mode
	embed   *embedEngine
	mux     *http.ServeMux
	created int64 // Unix seconds, for /v1/models
	seq     atomic.Uint64

	stop      chan struct{}
	engDone   chan struct{}
	mu        sync.Mutex // guards closed and handlers.Add
	closed    bool
	handlers  sync.WaitGroup
	closeOnce sync.Once

	// Fixed-mode state and counters (the batching engine keeps its own).
	fixedSlots   *slotQueue   // nil with unlimited slots
	fixedRunning atomic.Int64 // requests in flight with unlimited slots
	fixedPrompt  atomic.Int64
	fixedGen     atomic.Int64
	fixedMu      sync.Mutex // with GPUs, orders fixedRunning's changes and guards fixedBusy
	fixedBusy    busyMeter  // fixedRunning over time (unlimited slots, GPUs > 0)

	gpuLabels [][]*dto.LabelPair // each simulated GPU's DCGM labels; none without GPUs
}

// NewServer resolves cfg (see Resolve) and starts the engine goroutine.
func NewServer(cfg Config) (*Server, error) {
	rc, err := Resolve(cfg)
	if err != nil {
		return nil, fmt.Errorf("sim: new server: %w", err)
	}
	now := time.Now()
	s := &Server{
		cfg:       rc,
		created:   now.Unix(),
		stop:      make(chan struct{}),
		engDone:   make(chan struct{}),
		fixedBusy: newBusyMeter(now, rc.PowerSlots()),
		gpuLabels: gpuLabels(rc.GPUs),
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, apiChat) })
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, apiCompletions) })
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	s.mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, apiResponses) })
	s.mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) { s.generate(w, r, apiMessages) })
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	s.mux.HandleFunc("GET /metrics", s.metrics)
	s.mux.HandleFunc("GET /version", s.version)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	})
	s.embed = newEmbedEngine(rc.Embed, s.stop)
	if rc.Mode == modeBatching {
		s.eng = newEngine(rc, s.stop, now)
		go func() {
			defer close(s.engDone)
			s.eng.run()
		}()
	} else {
		if rc.FixedSlots > 0 {
			s.fixedSlots = newSlotQueue(rc.FixedSlots, rc.GPUs > 0, now)
		}
		close(s.engDone)
	}
	return s, nil
}

// version answers GET /version as vLLM does ({"version": …}), naming the simulator, its
// tokenizer rule, chat-template tokens and compute, and its slot limit as max_num_seqs (the
// decode slots in batching mode, fixed_slots in fixed mode when limited): kneecap's
// server-info probe records them.
func (s *Server) version(w http.ResponseWriter, _ *http.Request) {
	body := map[string]any{"version": "kneecap-sim " + string(s.cfg.Mode), "tokenizer": s.cfg.Tokenizer,
		"chat_template_tokens": s.cfg.ChatTemplateTokens, "tokens_per_chunk": s.cfg.TokensPerChunk,
		"compute": s.cfg.Compute}
	switch {
	case s.cfg.Mode == modeBatching:
		body["max_num_seqs"] = s.cfg.MaxNumSeqs
	case s.cfg.FixedSlots > 0:
		body["max_num_seqs"] = s.cfg.FixedSlots
		body["fixed_slots"] = s.cfg.FixedSlots
	}
	if l := s.cfg.contextLimit(); l > 0 {
		body["max_model_len"] = l
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// Config returns the resolved configuration the server runs.
func (s *Server) Config() Config { return s.cfg }

// Stats returns a snapshot of the engine's state and counters.
func (s *Server) Stats() Stats {
	st := s.streamStats()
	// The embeddings requests (embed.go) are the server's requests too.
	r, w := s.embed.counts()
	st.Running, st.Waiting = st.Running+r, st.Waiting+w
	return st
}

// streamStats is Stats of the streaming engine (batching or fixed mode).
func (s *Server) streamStats() Stats {
	if s.eng != nil {
		return s.eng.snapshot()
	}
	st := Stats{
		Running:          int(s.fixedRunning.Load()),
		PromptTokens:     s.fixedPrompt.Load(),
		GenerationTokens: s.fixedGen.Load(),
	}
	if s.fixedSlots != nil {
		st.Running, st.Waiting = s.fixedSlots.counts()
	}
	return st
}

// ServeHTTP serves the OpenAI-compatible API: POST /v1/chat/completions, POST
// /v1/completions, POST /v1/responses, POST /v1/messages, POST /v1/embeddings, GET /v1/models, GET /health and GET /metrics. After Close it answers 503.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server is shutting down")
		return
	}
	s.handlers.Add(1)
	s.mu.Unlock()
	defer s.handlers.Done()
	s.mux.ServeHTTP(w, r)
}

// Close stops the engine; in-flight streams end without [DONE]. It waits for the engine
// goroutine and every running handler, and is safe to call more than once.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.mu.Unlock()
		close(s.stop)
	})
	<-s.engDone
	<-s.embed.done
	s.handlers.Wait()
	return nil
}

// idle waits until no handler runs, or until ctx is done. Call it only once no new request
// can arrive (after http.Server.Shutdown); if ctx ends first its waiting goroutine ends with
// the handlers, which Close ends.
func (s *Server) idle(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		s.handlers.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// errorBody is the OpenAI error envelope.
type errorBody struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

// writeError writes an OpenAI-style error: {"error": {"message", "type", "param", "code"}}.
func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: apiError{Message: msg, Type: typ, Code: status}})
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Object string      `json:"object"`
		Data   []modelCard `json:"data"`
	}{"list", s.modelCards()})
}

// sleepCtx waits d, or until ctx is done or the server stops; it reports whether the full
// wait elapsed.
func (s *Server) sleepCtx(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	return wait(ctx, s.stop, t.C) == nil
}

// wait waits until ch delivers, ctx is done or the server stops (stop closes): nil, ctx's
// error or errStopped.
func wait[T any](ctx context.Context, stop <-chan struct{}, ch <-chan T) error {
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return errStopped
	}
}

// errStopped reports that the server closed while a request was in flight.
var errStopped = errors.New("sim: server closed")
