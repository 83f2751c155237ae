package workload

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Multi-turn chat sessions (DESIGN §3.6, workload.sessions): each closed-loop worker holds
// conversations. Turn k of a conversation sends the whole history — the earlier user messages
// and the assistant's replies as the server streamed them (content, not reasoning) — then the
// turn's user message; SessionsConfig.ThinkTime passes between turns, the workload's
// think_time between conversations. A failed turn ends its conversation.

// SessionsConfig is workload.sessions: the shape of the synthetic conversations. With a
// dataset only ThinkTime is read: the dataset's conversations are the sessions.
type SessionsConfig struct {
	// Turns is the number of user turns of a conversation, drawn per conversation.
	Turns Dist `yaml:"turns"`
	// ThinkTime is the pause of a worker between two turns of a conversation.
	ThinkTime time.Duration `yaml:"think_time"`
	// UserTokens is the length of each user message in tokens, without the chat template
	// (unset: workload.input_tokens).
	UserTokens Dist `yaml:"user_tokens"`
	// OutputTokens is each turn's max_tokens (unset: workload.output_tokens).
	OutputTokens Dist `yaml:"output_tokens"`
}

// maxTurns bounds the turns of one conversation.
const maxTurns = 1000

// Roles of a Message.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
)

// validate reports the problems of s; dataset says the conversations come from a dataset.
func (s *SessionsConfig) validate(dataset bool) []error {
	var errs []error
	if s.ThinkTime < 0 {
		errs = append(errs, fmt.Errorf("workload.sessions.think_time: is %v: must be ≥ 0", s.ThinkTime))
	}
	if dataset {
		for _, k := range []struct {
			name string
			d    Dist
		}{{"turns", s.Turns}, {"user_tokens", s.UserTokens}, {"output_tokens", s.OutputTokens}} {
			if k.d != (Dist{}) {
				errs = append(errs, fmt.Errorf("workload.sessions.%s: is set, but workload.dataset gives the conversations (their turns, messages and reply lengths): remove it", k.name))
			}
		}
		return errs
	}
	if s.Turns == (Dist{}) {
		errs = append(errs, errors.New("workload.sessions.turns: missing: the number of turns of a conversation (for example {dist: fixed, mean: 3})"))
	} else {
		errs = append(errs, s.Turns.Validate("workload.sessions.turns", "turn")...)
		if s.Turns.Nominal() > maxTurns || s.Turns.Min > maxTurns {
			errs = append(errs, fmt.Errorf("workload.sessions.turns: more than %d turns a conversation", maxTurns))
		}
	}
	if s.UserTokens != (Dist{}) {
		errs = append(errs, s.UserTokens.Validate("workload.sessions.user_tokens", "token")...)
	}
	if s.OutputTokens != (Dist{}) {
		errs = append(errs, s.OutputTokens.Validate("workload.sessions.output_tokens", "token")...)
	}
	return errs
}

// Conversations is a workload of multi-turn conversations: the runner keeps each worker's
// conversation (session) and sends its turns with their history, each turn made when it is
// sent. Next returns the first turn of conversation seq alone.
type Conversations interface {
	Workload
	// Turns returns the number of turns of conversation conv of worker at level,
	// deterministic in (seed, level, worker, conv).
	Turns(level, worker, conv int) int
	// Turn returns turn (from 0) of that conversation, deterministic likewise: its user
	// message (Prompt, PromptTokens its length in tokens without the chat template),
	// MaxTokens and IgnoreEOS.
	Turn(level, worker, conv, turn int) record.Request
	// Overhead is what the server adds to every request (its chat template), in tokens, as
	// far as it is known (0 otherwise): part of a turn's requested prompt length.
	Overhead() int
	// TurnThink is the pause between two turns of a conversation.
	TurnThink() time.Duration
	// MaxModelLen is the server's context limit in tokens (0: unknown): a conversation ends
	// before a turn whose requested prompt and max_tokens would exceed it.
	MaxModelLen() int
}

// Sessions is the workload of workload.sessions: synthetic conversations (user messages of
// user_tokens tokens, turns drawn per conversation) or a dataset's conversations.
//
// A synthetic user message of n tokens is unique to (seed, level, worker, conversation,
// turn): in words, a unique word then n − 1 pool words; sized in the server's tokens, a head
// of 8 vocabulary words unique to the message then vocabulary words whose costs add up to n
// exactly (estimated: round(n ÷ tokens_per_word) words). No first word and no template base:
// the template is counted once per request, in Overhead.
type Sessions struct {
	cfg            SessionsConfig
	seed           int64
	fixed          bool
	turns          sampler
	user           sampler
	out            sampler
	words          *Synthetic
	sized          *sizedSynthetic
	ds             *Dataset
	templateTokens int
	maxLen         int
	models         modelMix // workload.models: one draw per conversation
}

var _ Conversations = (*Sessions)(nil)

// newSessions returns the sessions workload of cfg (cfg.Sessions set, validated).
func newSessions(cfg WorkloadConfig, api record.API) (*Sessions, error) {
	if api == record.APICompletions {
		return nil, errors.New("sweep: workload.sessions: needs target.api chat (a conversation is a list of messages)")
	}
	sc := *cfg.Sessions
	s := &Sessions{cfg: sc, seed: cfg.Seed, fixed: cfg.FixedOutput, models: cfg.modelMix()}
	if cfg.Dataset != "" {
		ds, err := LoadDataset(cfg, api)
		if err != nil {
			return nil, err
		}
		s.ds = ds
		return s, nil
	}
	if sc.UserTokens == (Dist{}) {
		sc.UserTokens = cfg.InputTokens
	}
	if sc.OutputTokens == (Dist{}) {
		sc.OutputTokens = cfg.OutputTokens
	}
	s.cfg = sc
	s.turns, s.user, s.out = newSampler(sc.Turns), newSampler(sc.UserTokens), newSampler(sc.OutputTokens)
	inner := cfg
	inner.InputTokens, inner.OutputTokens, inner.PrefixCache, inner.Sessions = sc.UserTokens, sc.OutputTokens, false, nil
	syn, err := newSynthetic(inner, api)
	if err != nil {
		return nil, err
	}
	s.words = syn
	return s, nil
}

// size returns s with its messages sized in the server's tokens (SizePrompts).
func (s *Sessions) size(ctx context.Context, opts SizingOptions) (Workload, record.PromptSizing, error) {
	var inner Workload = s.words
	if s.ds != nil {
		inner = s.ds
	}
	w, sz, err := SizePrompts(ctx, inner, opts)
	if err != nil {
		return nil, sz, err
	}
	out := *s
	switch w := w.(type) {
	case *sizedSynthetic:
		out.sized = w
		out.templateTokens = max(0, int(math.Round(sz.OverheadTokens)))
	case *Dataset:
		out.ds = w
		out.templateTokens = max(0, int(math.Round(sz.OverheadTokens)))
	}
	if sz.MaxModelLen > 0 {
		out.maxLen = sz.MaxModelLen
	}
	return &out, sz, nil
}

// MaxModelLen implements Conversations.
func (s *Sessions) MaxModelLen() int { return s.maxLen }

// WithMaxModelLen returns w with the server's context limit n (tokens) when w is a sessions
// workload whose sizing did not learn one (the server's info reported it); w otherwise.
func WithMaxModelLen(w Workload, n int) Workload {
	s, ok := w.(*Sessions)
	if !ok || n <= 0 || s.maxLen > 0 {
		return w
	}
	out := *s
	out.maxLen = n
	return &out
}

// ContextWarning returns a warning when the nominal conversation of w does not fit the
// server's context limit: its last turn of n turns (the mean of sessions.turns) asks for
// T + n·U + n·O tokens (template, user messages, replies and the last turn's max_tokens, at
// their nominal lengths), more than max_model_len; "" otherwise, and for a dataset's
// conversations or when the limit is not known.
func ContextWarning(w Workload) string {
	s, ok := w.(*Sessions)
	if !ok || s.maxLen <= 0 || s.ds != nil {
		return ""
	}
	n, u, o := s.cfg.Turns.Nominal(), s.cfg.UserTokens.Nominal(), s.cfg.OutputTokens.Nominal()
	need := float64(s.templateTokens) + n*(u+o)
	if !(need > float64(s.maxLen)) {
		return ""
	}
	return fmt.Sprintf("workload.sessions: a conversation of %.4g turns (%.4g user + %.4g output tokens each, template %d) reaches %.0f tokens, "+
		"more than max_model_len %d: conversations end before the turn whose history + max_tokens would exceed it (each level notes how many)",
		n, u, o, s.templateTokens, need, s.maxLen)
}

// Overhead implements Conversations.
func (s *Sessions) Overhead() int { return s.templateTokens }

// TurnThink implements Conversations.
func (s *Sessions) TurnThink() time.Duration { return s.cfg.ThinkTime }

// Next returns the first turn of conversation seq, alone (a probe; a rate level's request).
func (s *Sessions) Next(level, worker, seq int) record.Request {
	req := s.Turn(level, worker, seq, 0)
	req.PromptTokens += s.templateTokens
	return req
}

// sessionSalt separates the conversations' generators from the single requests'.
const sessionSalt = 0x73657373696f6e

// turnRand returns the generator of turn (0 = the conversation's own draws, from 1 the
// turns') of conversation conv of worker at level.
func turnRand(seed int64, level, worker, conv, turn int) *rand.Rand {
	h := splitmix64(requestHash(seed^sessionSalt, level, worker, conv) ^ uint64(turn))
	return rand.New(rand.NewPCG(uint64(seed), h))
}

// Turns implements Conversations.
func (s *Sessions) Turns(level, worker, conv int) int {
	if s.ds != nil {
		return s.ds.turns(s.ds.pick(level, worker, conv))
	}
	return min(s.turns.Draw(turnRand(s.seed, level, worker, conv, 0)), maxTurns)
}

// Turn implements Conversations. Every turn of a conversation asks the model drawn for the
// conversation (workload.models).
func (s *Sessions) Turn(level, worker, conv, turn int) record.Request {
	r := turnRand(s.seed, level, worker, conv, turn+1)
	model := s.models.pick(level, worker, conv)
	if s.ds != nil {
		req := s.ds.turn(s.ds.pick(level, worker, conv), turn, r)
		req.Model = model
		return req
	}
	u, o := s.user.Draw(r), s.out.Draw(r)
	req := record.Request{MaxTokens: o, IgnoreEOS: s.fixed, Model: model}
	if s.sized != nil {
		req.Prompt, req.PromptTokens = s.sized.message(r, level, worker, conv, turn, u)
	} else {
		req.Prompt, req.PromptTokens = s.words.message(r, level, worker, conv, turn, u), u
	}
	return req
}

// Conversation returns every turn of conversation conv of worker at level (Turns, Turn).
func (s *Sessions) Conversation(level, worker, conv int) []record.Request {
	out := make([]record.Request, s.Turns(level, worker, conv))
	for t := range out {
		out[t] = s.Turn(level, worker, conv, t)
	}
	return out
}

// message returns a user message of n words, the first unique to (level, worker, conv, turn).
func (s *Synthetic) message(r *rand.Rand, level, worker, conv, turn, n int) string {
	var b strings.Builder
	b.Grow(n * 8)
	b.WriteString("u")
	b.WriteString(strconv.FormatUint(splitmix64(uint64(s.cfg.Seed))&0xffff, 36))
	for _, v := range []int{level, worker, conv, turn} {
		b.WriteByte('-')
		b.WriteString(strconv.Itoa(v))
	}
	for i := 1; i < n; i++ {
		b.WriteByte(' ')
		b.WriteString(s.words[r.IntN(len(s.words))])
	}
	return b.String()
}

// message returns a user message of n of the server's tokens (exact) or of about n (the
// usage fit), and its length: a head unique to (level, worker, conv, turn), then vocabulary
// words in the message's affine order, ended by words of the largest cost that fits.
func (z *sizedSynthetic) message(r *rand.Rand, level, worker, conv, turn, n int) (string, int) {
	a := 2*r.IntN(tableSize/2) + 1
	off := r.IntN(tableSize)
	p := sizedPrompt{z: z}
	p.b.Grow(int(float64(n)*z.bytesPerToken) + 16)
	if z.exact {
		p.left = n
	} else {
		p.left = max(1, int(math.Round(float64(n)/z.tpw)))
	}
	// Unique for 2¹⁸ conversations of up to 1024 turns per worker and level (messageHead;
	// every later prefix is the conversation's).
	z.fill(&p, z.messageHead(level, worker, conv, turn), messageHeadWords, a, off, r)
	if !z.exact {
		p.tokens = n
	}
	return strings.TrimPrefix(p.b.String(), " "), p.tokens
}

// MeanThink is the mean pause of a worker between two requests, for sizing windows
// (Preflight.CheckWindow): think_time without sessions; with them, a conversation of n turns
// (the nominal turns) pauses n − 1 times sessions.think_time and once think_time, so
// ((n − 1)·sessions.think_time + think_time) ÷ n. A dataset's conversations, whose turns are
// known only once it is read, count one turn here: MeanThink of the workload counts them.
func (w WorkloadConfig) MeanThink() time.Duration {
	s := w.Sessions
	if s == nil {
		return w.ThinkTime
	}
	n := 1.0
	if w.Dataset == "" {
		n = s.Turns.Nominal()
	}
	return meanThink(n, s.ThinkTime, w.ThinkTime)
}

// MeanThink is WorkloadConfig.MeanThink of cfg, the workload w made of it, with a dataset's
// conversations counting their mean turns (every entry is equally likely).
func MeanThink(cfg WorkloadConfig, w Workload) time.Duration {
	s, ok := w.(*Sessions)
	if !ok || s.ds == nil || len(s.ds.entries) == 0 {
		return cfg.MeanThink()
	}
	total := 0
	for i := range s.ds.entries {
		total += s.ds.turns(&s.ds.entries[i])
	}
	return meanThink(float64(total)/float64(len(s.ds.entries)), s.cfg.ThinkTime, cfg.ThinkTime)
}

// meanThink is ((n − 1)·turn + conv) ÷ n: n − 1 pauses between turns, one after the
// conversation; conv for n < 1 (not a number of turns).
func meanThink(n float64, turn, conv time.Duration) time.Duration {
	if !(n >= 1) {
		return conv
	}
	return time.Duration(((n-1)*float64(turn) + float64(conv)) / n)
}
