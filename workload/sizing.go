package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/kneecap/kneecap/record"
)

// sizingTimeout bounds the prompt sizing before the first level.
const sizingTimeout = time.Minute

// countParallel is the number of counts a Counter is asked for at once.
const countParallel = 8

// TokenCounter counts tokens as the server under test does. Implementations must be safe for
// concurrent use.
type TokenCounter interface {
	// CountTokens returns the number of tokens of text sent as the prompt (the one user
	// message of a chat request).
	CountTokens(ctx context.Context, text string) (int, error)
}

// Counter is a TokenCounter and what its counts include.
type Counter struct {
	TokenCounter
	// Source names the counter in the sizing record: "POST /tokenize (messages)", a
	// tokenizer file.
	Source string
	// Templated reports that counts include what the server adds to a chat request (its
	// chat template), as vLLM's messages form does. Otherwise the difference is measured
	// from the server's usage (SizePrompts).
	Templated bool
	// MaxModelLen is the context limit the counter reported, in tokens (0: unknown).
	MaxModelLen int
}

// SizingOptions says how SizePrompts may learn the server's token counts.
type SizingOptions struct {
	// Method is workload.prompt_sizing; empty means auto.
	Method string
	// API is how requests are sent: a chat request's prompt includes the chat template.
	API record.API
	// Endpoint counts with the server's tokenize endpoint; nil: none answered.
	Endpoint *Counter
	// Tokenizer counts with workload.tokenizer; nil: not set.
	Tokenizer *Counter
	// Client sends the usage probes (max_tokens 1); nil sends none.
	Client record.Client
}

// wordsSizing is the sizing of the words method: one token a word.
func wordsSizing() record.PromptSizing {
	return record.PromptSizing{Method: record.SizingWords, TokensPerWord: 1}
}

// errNoCounter is the error of a method whose counter is missing.
var errNoCounter = errors.New("not available")

// SizePrompts returns w sized in the server's tokens by opts.Method (DESIGN §3.6) and what the
// sizing found. A synthetic workload then builds prompts whose length in the server's tokens,
// chat template included, is the drawn one; a dataset keeps its texts and counts each entry
// in the server's tokens. With auto, a method that fails gives way to the next (the failure
// is in Notes) down to words; an explicit method that fails is an error. A workload of
// another kind, or the words method, is returned unchanged.
func SizePrompts(ctx context.Context, w Workload, opts SizingOptions) (Workload, record.PromptSizing, error) {
	method := opts.Method
	if method == "" {
		method = record.SizingAuto
	}
	if s, ok := w.(*Sessions); ok {
		return s.size(ctx, opts)
	}
	syn, isSyn := w.(*Synthetic)
	ds, isDS := w.(*Dataset)
	tw, isTrace := w.(*TraceWorkload)
	if isTrace { // a trace builds its prompts from the synthetic vocabulary, sized
		syn, isSyn = tw.syn, true
	}
	if method == record.SizingWords || !isSyn && !isDS {
		return w, wordsSizing(), nil
	}
	ctx, cancel := context.WithTimeout(ctx, sizingTimeout)
	defer cancel()
	tries := []string{method}
	if method == record.SizingAuto {
		tries = []string{record.SizingTokenizer, record.SizingTokenize, record.SizingUsage}
	}
	var notes []string
	for _, m := range tries {
		var (
			out Workload
			sz  record.PromptSizing
			err error
		)
		if isSyn {
			out, sz, err = sizeSynthetic(ctx, syn, m, opts)
		} else {
			out, sz, err = sizeDataset(ctx, ds, m, opts)
		}
		if err == nil {
			sz.Notes = append(notes, sz.Notes...)
			z, ok := out.(*sizedSynthetic)
			if ok && isTrace {
				out = tw.sized(z)
			} else if ok {
				if err := z.checkSharedPrefix(); err != nil {
					return nil, record.PromptSizing{}, fmt.Errorf("sweep: prompt sizing %s: %w", m, err)
				}
			}
			return out, sz, nil
		}
		if ctx.Err() != nil && ctx.Err() != context.DeadlineExceeded {
			return nil, record.PromptSizing{}, fmt.Errorf("sweep: prompt sizing: %w", ctx.Err())
		}
		if method != record.SizingAuto {
			return nil, record.PromptSizing{}, fmt.Errorf("sweep: prompt sizing %s: %w", m, err)
		}
		if !errors.Is(err, errNoCounter) {
			notes = append(notes, fmt.Sprintf("%s: %v", m, err))
		}
	}
	sz := wordsSizing()
	if opts.Endpoint == nil {
		notes = append(notes, "no tokenize endpoint answered")
	}
	sz.Notes = append(notes, "prompts are sized in words (one token a word): their length in the server's tokens is not known")
	return w, sz, nil
}

// counterFor returns the counter of an exact method, or errNoCounter.
func counterFor(method string, opts SizingOptions) (*Counter, error) {
	switch method {
	case record.SizingTokenize:
		if opts.Endpoint == nil {
			return nil, fmt.Errorf("%w: no tokenize endpoint answered", errNoCounter)
		}
		return opts.Endpoint, nil
	case record.SizingTokenizer:
		if opts.Tokenizer == nil {
			return nil, fmt.Errorf("%w: workload.tokenizer is not set", errNoCounter)
		}
		return opts.Tokenizer, nil
	}
	return nil, nil
}

// countAll counts every text with c, countParallel at a time; the first error ends it.
func countAll(ctx context.Context, c TokenCounter, texts []string) ([]int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]int, len(texts))
	next := make(chan int)
	var (
		mu    sync.Mutex
		first error
		wg    sync.WaitGroup
	)
	for range min(countParallel, len(texts)) {
		wg.Go(func() {
			for i := range next {
				n, err := c.CountTokens(ctx, texts[i])
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
						cancel()
					}
					mu.Unlock()
					continue
				}
				out[i] = n
			}
		})
	}
feed:
	for i := range texts {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if first == nil && ctx.Err() != nil {
		first = ctx.Err()
	}
	return out, first
}

// errNoUsage is the answer of a probe whose response had no usage.prompt_tokens.
var errNoUsage = errors.New("the server reported no usage.prompt_tokens")

// usageCount sends text as a request for one token and returns the server's
// usage.prompt_tokens.
func usageCount(ctx context.Context, c record.Client, text string) (int, error) {
	if c == nil {
		return 0, errNoUsage
	}
	req := record.Request{Prompt: text, MaxTokens: 1}
	var rec record.Record
	c.Do(ctx, &req, &rec)
	if !rec.OK() && rec.ErrorClass != record.ErrEmpty {
		msg := rec.Error
		if rec.ErrorClass != "" {
			msg = string(rec.ErrorClass) + ": " + msg
		}
		return 0, fmt.Errorf("probe request of %d words: %s", len(strings.Fields(text)), msg)
	}
	if rec.PromptTokens <= 0 {
		return 0, errNoUsage
	}
	if rec.PromptTokens > len(text)+maxOverhead {
		return 0, fmt.Errorf("usage.prompt_tokens %d for a prompt of %d bytes: not believed", rec.PromptTokens, len(text))
	}
	return rec.PromptTokens, nil
}

// maxOverhead bounds what a server may add to a prompt (a chat template, a system prompt), in
// tokens: more is not believed.
const maxOverhead = 8192

// fitLine fits y = a + b·x by least squares and returns a, b and the root-mean-square
// residual; with fewer than two distinct x it returns ok false.
func fitLine(x, y []float64) (a, b, rms float64, ok bool) {
	n := float64(len(x))
	var sx, sy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for i := range x {
		sxx += (x[i] - mx) * (x[i] - mx)
		sxy += (x[i] - mx) * (y[i] - my)
	}
	if len(x) < 2 || sxx == 0 {
		return 0, 0, 0, false
	}
	b = sxy / sxx
	a = my - b*mx
	var ss float64
	for i := range x {
		r := y[i] - a - b*x[i]
		ss += r * r
	}
	return a, b, math.Sqrt(ss / n), true
}
