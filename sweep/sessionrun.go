package sweep

import (
	"strconv"
	"time"
)

// session is a closed-loop worker's conversation state (workload.sessions): the conversation
// it is in, the next turn and the history so far. It is the worker's own, never shared.
type session struct {
	src           Conversations
	level, worker int
	conv          int       // the conversation's number, from 0, per worker and level
	id            string    // Record.Session of its turns
	turns         []Request // the conversation's turns; nil: start the next one
	turn          int       // the index of the next turn
	history       []Message
	tokens        int // requested tokens of the history: user messages and replies
}

// newSession returns worker's session state at level, or nil when w is not a Conversations.
func newSession(w Workload, level, worker int) *session {
	src, ok := w.(Conversations)
	if !ok {
		return nil
	}
	return &session{src: src, level: level, worker: worker}
}

// next returns the request of the session's next turn, starting a conversation when none is
// under way; its record carries s.id and turn s.turn + 1.
func (s *session) next() Request {
	if s.turns == nil {
		s.turns = s.src.Conversation(s.level, s.worker, s.conv)
		s.turn, s.tokens = 0, 0
		s.history = make([]Message, 0, 2*len(s.turns))
		s.id = strconv.Itoa(s.level) + "." + strconv.Itoa(s.worker) + "." + strconv.Itoa(s.conv)
	}
	req := s.turns[s.turn]
	req.History = s.history
	req.PromptTokens += s.src.Overhead() + s.tokens
	req.KeepReply = true
	return req
}

// ended takes the outcome of the turn req and returns the pause before the next request: the
// turn think time within a conversation; think after its last turn or a failed one, which
// ends it.
func (s *session) ended(req *Request, rec *Record, think time.Duration) time.Duration {
	msg := s.turns[s.turn]
	if !rec.OK() || s.turn+1 >= len(s.turns) {
		s.turns, s.history = nil, nil
		s.conv++
		return think
	}
	s.history = append(s.history,
		Message{Role: RoleUser, Content: msg.Prompt},
		Message{Role: RoleAssistant, Content: req.Reply})
	s.tokens += msg.PromptTokens + rec.OutputTokens
	s.turn++
	return s.src.TurnThink()
}
