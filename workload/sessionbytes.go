package workload

// historyBytesPerToken is the bytes of history text a token is estimated to take: a
// synthetic word is one to a few tokens of 4–10 bytes, English text about 4 bytes a token.
const historyBytesPerToken = 8

// SessionBytes is what a worker's conversation adds to its cost (workload.sessions): twice
// the nominal history of its last turn, n·U + (n − 1)·O tokens of historyBytesPerToken (the
// history kept, and its copy in the request's body); 0 without sessions or for a dataset's
// conversations, whose lengths are not known before. The server's context limit bounds the
// history (a conversation ends before a turn that would exceed it).
func (w WorkloadConfig) SessionBytes() uint64 {
	s := w.Sessions
	if s == nil || w.Dataset != "" {
		return 0
	}
	u, o := s.UserTokens, s.OutputTokens
	if u == (Dist{}) {
		u = w.InputTokens
	}
	if o == (Dist{}) {
		o = w.OutputTokens
	}
	n := min(s.Turns.Nominal(), maxTurns)
	tokens := n*u.Nominal() + (n-1)*o.Nominal()
	if !(tokens > 0) {
		return 0
	}
	return uint64(2 * tokens * historyBytesPerToken)
}
