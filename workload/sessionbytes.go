package workload

import "fmt"

// historyBytesPerToken is the bytes of history text a token is estimated to take: a
// synthetic word is one to a few tokens of 4–10 bytes, English text about 4 bytes a token.
const historyBytesPerToken = 8

// nominalTurns returns a synthetic conversation's nominal turns n (at most maxTurns) and each
// turn's nominal user and output tokens u and o (sessions.user_tokens, else input_tokens;
// sessions.output_tokens, else output_tokens); ok is false without sessions or for a
// dataset's conversations, whose lengths are not known before it is read.
func (w WorkloadConfig) nominalTurns() (n, u, o float64, ok bool) {
	s := w.Sessions
	if s == nil || w.Dataset != "" {
		return 0, 0, 0, false
	}
	ud, od := s.UserTokens, s.OutputTokens
	if ud == (Dist{}) {
		ud = w.InputTokens
	}
	if od == (Dist{}) {
		od = w.OutputTokens
	}
	return min(s.Turns.Nominal(), maxTurns), ud.Nominal(), od.Nominal(), true
}

// SessionBytes is what a worker's conversation adds to its cost (workload.sessions): twice
// the nominal history of its last turn, n·U + (n − 1)·O tokens of historyBytesPerToken (the
// history kept, and its copy in the request's body); 0 without sessions or for a dataset's
// conversations, whose lengths are not known before. The server's context limit bounds the
// history (a conversation ends before a turn that would exceed it).
func (w WorkloadConfig) SessionBytes() uint64 {
	n, u, o, ok := w.nominalTurns()
	tokens := n*u + (n-1)*o
	if !ok || !(tokens > 0) {
		return 0
	}
	return uint64(2 * tokens * historyBytesPerToken)
}

// historyProblem is the problem of synthetic conversations whose nominal last request, n·(U +
// O) tokens (the history, its user message and max_tokens), is past record.MaxTokens: nil
// when it is not (a longer draw is cut at run time, as by the server's context limit).
func (w WorkloadConfig) historyProblem() error {
	n, u, o, ok := w.nominalTurns()
	if !ok {
		return nil
	}
	p := tooLong(fmt.Sprintf("a conversation of %s turns of %s user + %s output tokens (its last request)", number(n), number(u), number(o)), n*(u+o))
	if p == "" {
		return nil
	}
	return fmt.Errorf("workload.sessions.turns: %s: fewer turns or shorter messages", p)
}
