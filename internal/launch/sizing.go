package launch

import (
	"context"
	"fmt"
	"strings"

	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
	"github.com/kneecap/kneecap/workload/hftokenizer"
)

// loadTokenizer reads workload.tokenizer when the sizing may use it: a file the library cannot
// read is refused with the configuration, before anything is sent.
func (s *Sweep) loadTokenizer() error {
	wl := s.Cfg.Workload
	if wl.Tokenizer == "" || wl.PromptSizing != "" && wl.PromptSizing != record.SizingAuto && wl.PromptSizing != record.SizingTokenizer {
		return nil
	}
	tk, err := hftokenizer.Load(wl.Tokenizer)
	if err != nil {
		return exit.Usagef("sweep: workload.tokenizer: %w", err)
	}
	s.tokenizer = tk
	return nil
}

// sizePrompts learns, before the first level, how the target counts prompt tokens and sizes
// the workload by it (DESIGN §3.6): workload.prompt_sizing picks the method (auto: the
// tokenizer file, else the server's tokenize endpoint, else usage calibration, else words
// with a warning). The result is printed once; an explicit method the target cannot serve is
// exit 2. After a preflight whose probe failed (hung: no answer in time, or a stream past its
// max_tokens), no probe is sent: the server's probes would only spend the answer budget of
// the first level. Prompts are then sized with workload.tokenizer when it is set (a local
// file: the chat template not counted), else in words, with a note saying why. Each probe the
// server answers starts the answer budget's clock again; each waits under its own share of it
// (budgetClient, budgetCounter).
func (s *Sweep) sizePrompts(ctx context.Context, t *Target, hung bool) error {
	wl := s.Cfg.Workload
	method := wl.PromptSizing
	if method == "" {
		method = record.SizingAuto
	}
	opts := workload.SizingOptions{Method: method, API: s.Cfg.Target.API, Client: budgetClient{t.client, s}}
	if hung {
		// loadTokenizer read one only for auto or tokenizer.
		method, opts.Client = record.SizingWords, nil
		if s.tokenizer != nil {
			method = record.SizingTokenizer
		}
		opts.Method = method
	}
	if s.tokenizer != nil {
		opts.Tokenizer = &workload.Counter{TokenCounter: s.tokenizer, Source: "tokenizer " + s.tokenizer.Path()}
		if len(s.tokenizer.Dropped) > 0 {
			fmt.Fprintf(s.Log, "kneecap: warning: workload.tokenizer: %s left out (the library cannot build it)\n",
				strings.Join(s.tokenizer.Dropped, ", "))
		}
	}
	// auto uses a tokenizer file when there is one: the endpoint is not probed then.
	if method == record.SizingTokenize || method == record.SizingAuto && s.tokenizer == nil {
		pre, cancel := s.probesContext(ctx)
		ep, err := t.client.Tokenize(pre)
		cancel()
		switch {
		case err == nil:
			s.heard()
			opts.Endpoint = ep.Counter()
			opts.Endpoint.TokenCounter = budgetCounter{ep, s}
		case method == record.SizingTokenize:
			return exit.Usagef("sweep: prompt sizing tokenize: %v", err)
		}
	}
	w, sz, err := workload.SizePrompts(ctx, s.workload, opts)
	if err != nil {
		return exit.Usagef("%w", err)
	}
	if hung {
		sz.Notes = append(sz.Notes, s.hungNote(method))
	}
	// An embeddings request's inputs are prompts sized as these are.
	s.workload, s.sizing = workload.Batch(w, s.Cfg.Target.API, s.Cfg.Workload.Batch), &sz
	fmt.Fprintf(s.Log, "kneecap: prompt sizing: %s\n", sz)
	for _, n := range sz.Notes {
		fmt.Fprintf(s.Log, "kneecap: warning: prompt sizing: %s\n", n)
	}
	return nil
}

// hungNote says why the prompts were sized by method without asking the server: its preflight
// probe's failure, by its cause (an overlong probe did answer, too much).
func (s *Sweep) hungNote(method string) string {
	why := "the server did not answer the preflight's probe"
	if s.hungClass == record.ErrOverlong {
		why = "the preflight's probe streamed past its max_tokens"
	}
	if method == record.SizingTokenizer {
		return why + ": prompts are sized with workload.tokenizer alone, no probe request sent"
	}
	return why + ": prompts are sized in words (one token a word), its tokens not asked"
}

// recordSizing records the sizing in levels.json. A resumed run keeps the sizing its first
// levels were measured with and warns when the target now counts differently.
func (s *Sweep) recordSizing() {
	if s.done != nil && s.done.PromptSizing != nil {
		if was, now := s.done.PromptSizing.String(), s.sizing.String(); was != now {
			fmt.Fprintf(s.Log, "kneecap: warning: prompts are now sized as %s; the levels so far as %s (levels.json keeps the first)\n", now, was)
		}
		return
	}
	s.Dir.SetPromptSizing(s.sizing)
}

// limitContext gives a sessions workload the server's context limit when the sizing did not
// learn it and the server's info reports one, and warns when the nominal conversation
// outgrows the limit (workload.ContextWarning: conversations then end early).
func (s *Sweep) limitContext(info *record.ServerInfo) {
	s.workload = workload.WithMaxModelLen(s.workload, info.MaxModelLen())
	if w := workload.ContextWarning(s.workload); w != "" {
		fmt.Fprintf(s.Log, "kneecap: warning: %s\n", w)
	}
}
