package openai

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
)

// Transport buffer sizes per connection, in bytes (see New).
const (
	transportReadBuffer  = 1 << 10
	transportWriteBuffer = 1 << 10
)

// maxChunksPrealloc caps the Chunks capacity allocated up front from max_tokens, in chunks: a
// generous max_tokens (a model's whole context) must not cost megabytes per in-flight stream.
const maxChunksPrealloc = 4096

// drainTimeout bounds reading the rest of a body after [DONE] so the connection can be
// reused; a server that keeps the stream open past it costs a connection, not a worker (see
// Client.finish).
const drainTimeout = 250 * time.Millisecond

// Client implements record.Client on go-openai. It is safe for concurrent use.
type Client struct {
	opts      Options
	api       record.API
	proto     protocol // the API's side of a request
	oc        *goopenai.Client
	doer      *doer // go-openai's HTTPDoer, which the raw protocols send through too
	transport *http.Transport
	fresh     *http.Transport // the retries' (see doer)
	// rt and freshRT are transport and fresh adding Options.Header (headerTransport).
	rt, freshRT http.RoundTripper
	// credentials are the API key and the secret values of Options.Header (redact.HeaderSecrets);
	// secrets holds them for redact.
	credentials []string
	secrets     *redact.Secrets
	// extra is Options.ExtraBody, each value encoded once.
	extra map[string]json.RawMessage
	// maxCompletionTokens sends max_tokens as max_completion_tokens: the model is one of
	// OpenAI's reasoning models, which reject max_tokens (go-openai's ReasoningValidator).
	maxCompletionTokens bool
	// openBodies is set once the server has left a body open past drainTimeout after
	// [DONE]: every later drain runs in the background (drains) so that no worker waits for
	// it.
	openBodies atomic.Bool
	drains     sync.WaitGroup
	// pace is the preflight's time a token (SetPace; 0: unknown), which bounds each stream's
	// time (overlong.go); boundSlack the least slack of that bound (minBoundSlack; tests
	// shorten it).
	pace, boundSlack time.Duration
}

var _ record.Client = (*Client)(nil)

// New returns a Client for opts. Zero fields of opts take DefaultOptions values except
// RecordChunks, API key and TLS settings, which are used as given.
func New(opts Options) (*Client, error) {
	def := DefaultOptions()
	if opts.API == "" {
		opts.API = def.API
	}
	proto, ok := protocolOf(opts.API)
	if !ok {
		return nil, fmt.Errorf("openai: new client: unknown api %q (want chat, completions, responses, messages or embeddings)", opts.API)
	}
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("openai: new client: base url %q is not an http(s) URL", redact.URLWithoutQuery(opts.BaseURL))
	}
	if opts.RequestTimeout < 0 || opts.TTFTTimeout < 0 || opts.StallTimeout < 0 {
		return nil, fmt.Errorf("openai: new client: negative timeout (request %v, ttft %v, stall %v)",
			opts.RequestTimeout, opts.TTFTTimeout, opts.StallTimeout)
	}
	header, err := canonicalHeader(opts.Header, opts.APIKey)
	if err == nil && opts.API == record.APIMessages {
		header, err = messagesHeader(header, opts.APIKey)
	}
	if err != nil {
		return nil, fmt.Errorf("openai: new client: %w", err)
	}
	opts.Header = header
	orDefault(&opts.MaxConns, def.MaxConns)
	orDefault(&opts.MaxLineBytes, def.MaxLineBytes)
	orDefault(&opts.MaxNonDataBytes, def.MaxNonDataBytes)
	orDefault(&opts.MaxBodyBytes, def.MaxBodyBytes)
	orDefault(&opts.MaxChunks, def.MaxChunks)
	orDefault(&opts.DialTimeout, def.DialTimeout)
	orDefault(&opts.MaxTokensPerChunk, def.MaxTokensPerChunk)
	orDefault(&opts.MaxRecordedChunks, def.MaxRecordedChunks)
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: opts.InsecureSkipVerify} //nolint:gosec // user opt-in
	if opts.CAFile != "" {
		pem, err := os.ReadFile(opts.CAFile)
		if err != nil {
			return nil, fmt.Errorf("openai: new client: read ca file: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("openai: new client: ca file %s: no PEM certificates found", opts.CAFile)
		}
		tlsConf.RootCAs = pool
	}
	dialer := &net.Dialer{Timeout: opts.DialTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         dialStamped(dialer),
		TLSClientConfig:     tlsConf,
		TLSHandshakeTimeout: opts.DialTimeout,
		// HTTP/1.1, one connection per in-flight stream, like the OpenAI Python SDK's
		// default; MaxConnsPerHost 0 never queues a request behind the pool.
		ForceAttemptHTTP2:   false,
		MaxIdleConns:        opts.MaxConns + 16,
		MaxIdleConnsPerHost: opts.MaxConns + 16,
		MaxConnsPerHost:     0,
		IdleConnTimeout:     90 * time.Second,
		// gzip would make the server buffer the stream; token timing needs raw chunks.
		DisableCompression: true,
		// Per-connection buffers (net/http's default is 4 KiB each): one stream event is a
		// few hundred bytes, a larger read or write bypasses the buffer, and go-openai adds
		// its own 4 KiB reader per stream, so 4 KiB here only costs memory per stream.
		ReadBufferSize:  transportReadBuffer,
		WriteBufferSize: transportWriteBuffer,
	}
	// Encode the extra body once: a value JSON cannot encode is a configuration error now,
	// not a failure of every request.
	extra := make(map[string]json.RawMessage, len(opts.ExtraBody))
	for k, v := range opts.ExtraBody {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("openai: new client: extra body field %q: %w", k, err)
		}
		extra[k] = b
	}
	bearer := opts.APIKey
	if opts.API == record.APIMessages {
		bearer = "" // sent as x-api-key (messagesHeader)
	}
	cfg := goopenai.DefaultConfig(bearer)
	cfg.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	// The retry of a request whose pooled connection the server had closed goes out on a
	// connection that is dialled for it and closed after it.
	fresh := tr.Clone()
	fresh.DisableKeepAlives = true
	rt := &headerTransport{base: tr, origin: u, header: opts.Header}
	freshRT := &headerTransport{base: fresh, origin: u, header: opts.Header}
	d := &doer{
		hc:    &http.Client{Transport: rt, CheckRedirect: checkRedirect},
		fresh: &http.Client{Transport: freshRT, CheckRedirect: checkRedirect},
		opts:  &opts, extra: extra,
	}
	cfg.HTTPClient = d
	c := &Client{opts: opts, boundSlack: minBoundSlack, api: opts.API, proto: proto, oc: goopenai.NewClientWithConfig(cfg), doer: d, transport: tr, fresh: fresh,
		rt: rt, freshRT: freshRT, extra: extra}
	c.credentials = credentials(opts.APIKey, opts.Header)
	c.secrets = redact.NewSecrets(c.credentials...)
	// The verdict depends only on the model, so it is taken once here, not per request.
	probe := goopenai.ChatCompletionRequest{Model: opts.Model, MaxTokens: 1,
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: "x"}}}
	c.maxCompletionTokens = errors.Is(goopenai.NewReasoningValidator().Validate(probe), goopenai.ErrReasoningModelMaxTokensDeprecated)
	return c, nil
}

// SetMaxTokensPerChunk sets Options.MaxTokensPerChunk (n ≤ 0: the default) once the server
// has said what it streams. Call it before the sweep's requests start.
func (c *Client) SetMaxTokensPerChunk(n int) {
	if n <= 0 {
		n = DefaultMaxTokensPerChunk
	}
	c.opts.MaxTokensPerChunk = n
}

// Close waits for the drains still running in the background (at most drainTimeout) and
// releases idle connections.
func (c *Client) Close() {
	c.drains.Wait()
	c.transport.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
}

// Models lists the served model IDs (GET /v1/models).
func (c *Client) Models(ctx context.Context) ([]string, error) {
	if c.opts.RequestTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.opts.RequestTimeout)
		defer cancel()
	}
	list, err := c.oc.ListModels(ctx)
	if err != nil {
		return nil, fmt.Errorf("openai: list models: %s", c.message(err))
	}
	ids := make([]string, 0, len(list.Models))
	for _, m := range list.Models {
		ids = append(ids, m.ID)
	}
	return ids, nil
}

// Do sends req as a streaming request and fills rec (see record.Client); an embeddings
// request goes out on the same lifecycle (deadlines, retry, classification), its answer one
// JSON body (embedResult). It never returns before the stream or body has ended or ctx is
// done.
func (c *Client) Do(ctx context.Context, req *record.Request, rec *record.Record) {
	st, reqCtx, cancel, start := c.begin(ctx, req)
	c.resetRecord(rec, req)
	// The API's protocol opens the stream (go-openai for chat and completions, a POST through
	// the same doer for the others); the adapter reads it (sseBody.next) and closes it. The
	// stream value go-openai returns, with its own line reader, is dropped at once.
	open, err := c.proto.open(reqCtx, c, req)
	if err == nil && st.body == nil && !st.whole {
		// doer.Do gives every 2xx stream response an event body and fails every 3xx one: only
		// a response that bypassed it would have none.
		_ = open.Close()
		err = errNoEventBody
	}
	tSend := st.recordSent(rec, start)
	if err != nil {
		rec.E2E = time.Since(tSend)
		c.fail(ctx, reqCtx, st, rec, err, st.reading)
		st.w.stop()
		cancel(nil)
		rec.End = time.Since(tSend)
		return
	}
	if st.whole {
		c.embedResult(ctx, reqCtx, st, tSend, req, rec)
		st.w.stop()
		cancel(nil)
		rec.End = max(time.Since(tSend), rec.E2E)
		return
	}
	end := requestEnd{rec: rec, tSend: tSend}
	done := c.read(ctx, reqCtx, st.body, st, tSend, req, &end)
	c.finish(st.body, st, cancel, done, &end)
}

// noEnd is the error of a stream that ended before its API's terminal event.
func (c *Client) noEnd() error {
	if c.proto.terminal() == doneTerminal {
		return errNoDone
	}
	return fmt.Errorf("%w: no %s event", errNoTerminal, c.proto.terminal())
}

// read consumes the stream and fills end.rec. It takes no locks; its allocations are the Chunks
// slice, preallocated from max_tokens (at most maxChunksPrealloc and MaxRecordedChunks;
// chunkLog), the event buffer's growth for a line over sseBufInit bytes, the non-data text
// kept for an error body, and the decoder of the payloads scanChunk declines. It reports
// whether the stream ended with [DONE]; on a kernel record that did, end.doneAt is the
// kernel's arrival of that line.
func (c *Client) read(ctx, reqCtx context.Context, s *sseBody, st *reqState,
	tSend time.Time, req *record.Request, end *requestEnd) (done bool) {
	rec := end.rec
	sr := streamRead{w: &st.w, off: tSend.Sub(st.w.start), arrival: st.arrival(), clock: st.clock, mark: st.mark,
		leaveAfter: leaveAfter(req)}
	sr.maxChunks, sr.capTokens = c.chunkCap(req)
	if req.KeepReply {
		sr.reply = new(strings.Builder)
	}
	if c.opts.RecordChunks {
		n := req.MaxTokens
		if n <= 0 {
			n = 256
		}
		sr.log = newChunkLog(c.opts.MaxRecordedChunks, min(n, maxChunksPrealloc, c.opts.MaxChunks))
	}
	dec := c.proto.events()
	err := c.readChunks(s, dec, tSend, &sr)
	st.left(err, reqCtx)
	if sr.reply != nil {
		req.Reply = sr.reply.String()
	}
	st.streamed = sr.sc.chunks
	sr.sc.sentBytes = st.sentBytes
	sc, chunks := sr.sc, sr.log.offsets
	nContent := sc.chunks
	rec.TTFT, rec.TTFA, rec.ReasoningChunks = sr.first, sr.answer, sc.reasoningChunks
	if nContent > 0 {
		rec.E2E = sr.last
	} else {
		rec.E2E = time.Since(tSend) // before the drain (Client.finish), which is not the request's time
	}
	done = errors.Is(err, io.EOF) && s.sawDone
	if c.opts.RecordChunks {
		if len(chunks) < cap(chunks)/2 {
			// max_tokens was a loose cap: the record is kept for the whole sweep, so it must
			// not hold the unused capacity.
			chunks = slices.Clone(chunks)
		}
		rec.Chunks, rec.ChunksTail = chunks, sr.log.chunkTail()
	} else if nContent > 0 {
		itl := sr.itl // allocated here, only for the records that keep it
		rec.ITL = &itl
	}
	setTokens(rec, sc, req, c.opts.MaxTokensPerChunk)
	rec.ReadLag = sr.lag.Record()
	if sr.kernel {
		rec.Clock, rec.SendStamp, rec.FirstGather = record.ClockKernel, sr.send, sr.firstGather
		rec.ClientSent, rec.Sent = rec.Sent, sr.sentAt
		rec.ClientTTFT, rec.ClientE2E = sr.cFirst, sr.cLast
		if done {
			end.doneAt, end.arrival = max(sr.arrival.Load(), sr.kLast), sr.arrival
		}
	}
	if sr.firstArrival != 0 {
		rec.TTFTKernel = time.Duration(sr.firstArrival - rec.Sent)
	}
	switch {
	case done && nContent > 0:
		rec.Status, rec.ErrorClass, rec.Error = record.StatusOK, "", ""
	case done:
		rec.Status, rec.ErrorClass = record.StatusError, record.ErrEmpty
		rec.Error = "openai: stream: ended with " + c.endedWith(dec) + " but no content"
	case errors.Is(err, io.EOF):
		c.fail(ctx, reqCtx, st, rec, c.noEnd(), true)
	default:
		c.fail(ctx, reqCtx, st, rec, err, true)
	}
	return done
}

// finish ends a request whose stream s was opened: after [DONE] (done) it reads the rest of
// the body so that the connection returns to the pool, bounded by drainTimeout, then closes
// the stream and releases the request's context. The record is complete before, but for
// Record.End: the drain is not the request's time. A server that leaves the body open after
// [DONE] would make every worker wait drainTimeout per request; once one has, every later
// drain runs in the background (owned by c.drains, waited for by Close), and its connection,
// when the body does not end, is closed at drainTimeout.
func (c *Client) finish(s *sseBody, st *reqState, cancel context.CancelCauseFunc, done bool, e *requestEnd) {
	end := func(arrival *atomic.Int64) (bool, int64) {
		ended, last := true, int64(0)
		if done {
			st.w.drain(drainTimeout)
			ended, last = s.drain(arrival)
		}
		st.w.stop()
		_ = s.Close()
		cancel(nil)
		return ended, last
	}
	if !done || !c.openBodies.Load() {
		ended, last := end(e.arrival)
		e.set(last)
		if !ended {
			c.openBodies.Store(true)
		}
		return
	}
	e.set(0)
	c.drains.Go(func() { end(nil) })
}

// requestEnd sets Record.End when the request lets go of its connection (finish).
type requestEnd struct {
	rec   *record.Record
	tSend time.Time // the client's t_send
	// On a kernel record that ended with [DONE]: doneAt is the kernel's arrival of that line
	// (Unix ns), arrival the connection's clock, for the drain's reads.
	doneAt  int64
	arrival *atomic.Int64
}

// set sets End from the kernel's arrival of the last byte read (the [DONE] line, or last,
// the drain's last read, Unix ns, 0: none) on a kernel record that ended with [DONE], else
// from the client's clock now; never below E2E.
func (e *requestEnd) set(last int64) {
	r := e.rec
	switch {
	case e.doneAt != 0:
		r.End = time.Duration(max(e.doneAt, last) - r.Sent)
	case r.KernelClock():
		r.End = time.Duration(time.Now().UnixNano() - r.Sent)
	default:
		r.End = time.Since(e.tSend)
	}
	r.End = max(r.End, r.E2E)
}

// fail records err, classified; streaming reports whether the response had started.
func (c *Client) fail(ctx, reqCtx context.Context, st *reqState, rec *record.Record, err error, streaming bool) {
	rec.Status = record.StatusError
	rec.RetryAfter = st.retryAfter
	switch cause := context.Cause(reqCtx); {
	case ctx.Err() != nil:
		rec.Status, rec.ErrorClass = record.StatusCancelled, record.ErrCancelled
		err = context.Cause(ctx)
	case userCancel(rec, err, cause):
		return
	case errors.Is(cause, errStreamBound):
		rec.ErrorClass = record.ErrTimeout
		err = c.pastBound(st)
	case errors.Is(err, errOverlongChunks):
		rec.ErrorClass = record.ErrOverlong
	case errors.Is(cause, errAnswerBudget):
		rec.ErrorClass = record.ErrTimeout
		err = c.silence(cause, st)
	case errors.Is(cause, errRequestTimeout):
		rec.ErrorClass = record.ErrTimeout
		err = fmt.Errorf("%w after %v: %w", errRequestTimeout, c.opts.RequestTimeout, err)
	case errors.Is(cause, errTTFTTimeout), errors.Is(cause, errStallTimeout):
		rec.ErrorClass = record.ErrTimeout
		err = c.silence(cause, st)
	default:
		rec.ErrorClass = classify(err, streaming)
	}
	op := "openai: request: "
	switch {
	case st.whole:
		op = "openai: embeddings: "
	case streaming:
		op = "openai: stream: "
	}
	rec.Error = op + c.message(err) + c.hint(err, st.model)
}

// silence says what a request ended by ttft_timeout or stall_timeout (cause) had seen.
func (c *Client) silence(cause error, st *reqState) error {
	if errors.Is(cause, errStallTimeout) {
		return fmt.Errorf("stalled: no content chunk for stall_timeout %v after %d content chunks (parts of a tool call count, other events do not)", c.opts.StallTimeout, st.streamed)
	}
	wait := fmt.Sprintf("ttft_timeout %v", c.opts.TTFTTimeout)
	if errors.Is(cause, errAnswerBudget) {
		wait = fmt.Sprintf("%s (no request of the first level answered; its deadline at %v of it)",
			st.w.budget, st.w.budget.Deadline().Sub(st.w.budget.From()))
	}
	switch {
	case st.gotAt.IsZero():
		return fmt.Errorf("no connection within %s", wait)
	case st.whole:
		return fmt.Errorf("no whole answer within %s (it bounds an embeddings answer, one body)", wait)
	case !st.firstByte.Load():
		return fmt.Errorf("no answer within %s: the server accepted the connection and sent nothing", wait)
	}
	return fmt.Errorf("no token within %s: the response began and streamed no content", wait)
}
