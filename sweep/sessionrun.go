package sweep

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// session is a closed-loop worker's conversation state (workload.sessions): the conversation
// it is in, the next turn and the history so far. It is the worker's own, never shared. Each
// turn is made when it is sent (Conversations.Turn): a conversation of many turns holds only
// its history, which the server's context limit (and record.MaxTokens) bounds.
type session struct {
	src           workload.Conversations
	cuts          *sessionCuts // the level's count of conversations cut by the context limit
	level, worker int
	conv          int            // the conversation's number, from 0, per worker and level
	id            string         // Record.Session of its turns
	n             int            // the conversation's turns; 0: start the next one
	turn          int            // the index of the next turn
	msg           record.Request // the next turn's user message, as Turn returned it
	history       []record.Message
	tokens        int // requested tokens of the history: user messages and replies
}

// newSession returns worker's session state at level, or nil when w is not a Conversations;
// cuts counts, for the level, the conversations the context limit ends.
func newSession(w workload.Workload, level, worker int, cuts *sessionCuts) *session {
	src, ok := w.(workload.Conversations)
	if !ok {
		return nil
	}
	return &session{src: src, cuts: cuts, level: level, worker: worker}
}

// next returns the request of the session's next turn, starting a conversation when none is
// under way; its record carries s.id and turn s.turn + 1. The reply is kept when another
// turn follows.
func (s *session) next() record.Request {
	if s.n == 0 {
		s.n = s.src.Turns(s.level, s.worker, s.conv)
		s.turn, s.tokens, s.history = 0, 0, nil
		s.msg = s.src.Turn(s.level, s.worker, s.conv, 0)
		s.id = strconv.Itoa(s.level) + "." + strconv.Itoa(s.worker) + "." + strconv.Itoa(s.conv)
	}
	req := s.msg
	req.History = s.history
	req.PromptTokens += s.src.Overhead() + s.tokens
	req.KeepReply = s.turn+1 < s.n
	return req
}

// ended takes the outcome of the turn req and returns the pause before the next request: the
// turn think time within a conversation; think after its last turn, a failed one, or before
// a turn whose requested prompt and max_tokens would exceed the server's context limit (or
// record.MaxTokens: historyLimit), all of which end it.
func (s *session) ended(req *record.Request, rec *record.Record, think time.Duration) time.Duration {
	if !rec.OK() || s.turn+1 >= s.n {
		s.end()
		return think
	}
	s.history = append(s.history,
		record.Message{Role: workload.RoleUser, Content: s.msg.Prompt},
		record.Message{Role: workload.RoleAssistant, Content: req.Reply})
	s.tokens += s.msg.PromptTokens + replyTokens(rec)
	s.turn++
	s.msg = s.src.Turn(s.level, s.worker, s.conv, s.turn)
	if m := historyLimit(s.src.MaxModelLen()); s.src.Overhead()+s.tokens+s.msg.PromptTokens+s.msg.MaxTokens > m {
		s.cuts.add(s.turn+1, m)
		s.end()
		return think
	}
	return s.src.TurnThink()
}

// historyLimit is the most tokens a turn's request may ask (its history, message and
// max_tokens): the server's context limit m, and never more than record.MaxTokens, so that a
// conversation's history cannot outgrow memory when the limit is unknown (m 0) or larger.
func historyLimit(m int) int {
	if m <= 0 || m > record.MaxTokens {
		return record.MaxTokens
	}
	return m
}

// end ends the conversation: the next request starts the next one.
func (s *session) end() {
	s.n, s.history, s.msg = 0, nil, record.Request{}
	s.conv++
}

// replyTokens is the length of rec's reply as the history keeps it: its output tokens
// without the reasoning (usage's reasoning tokens, or the reasoning-only chunks when the
// tokens are counted from chunks).
func replyTokens(rec *record.Record) int {
	n := rec.OutputTokens
	if rec.TokensSource == record.TokensFromChunks {
		n -= rec.ReasoningChunks
	} else {
		n -= rec.ReasoningTokens
	}
	return max(0, n)
}

// sessionCuts counts a level's conversations ended before a turn by the context limit, by
// that turn (from 1). Workers share it.
type sessionCuts struct {
	mu     sync.Mutex
	byTurn map[int]int
	limit  int
}

// add counts a conversation ended before turn (max_model_len m).
func (c *sessionCuts) add(turn, m int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byTurn == nil {
		c.byTurn = map[int]int{}
	}
	c.byTurn[turn]++
	c.limit = m
}

// note returns the level note of the cut conversations ("" when none was): "N conversations
// ended at turn k: history + max_tokens would exceed max_model_len M", the turns listed by
// count when several.
func (c *sessionCuts) note() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.byTurn) == 0 {
		return ""
	}
	turns := make([]int, 0, len(c.byTurn))
	total := 0
	for k, n := range c.byTurn {
		turns = append(turns, k)
		total += n
	}
	slices.Sort(turns)
	at := "turn " + strconv.Itoa(turns[0])
	if len(turns) > 1 {
		parts := make([]string, 0, min(len(turns), 6))
		for i, k := range turns {
			if i == 5 {
				parts = append(parts, "…")
				break
			}
			parts = append(parts, fmt.Sprintf("%d: %d", k, c.byTurn[k]))
		}
		at = "turns " + strings.Join(parts, ", ")
	}
	limit := fmt.Sprintf("max_model_len %d", c.limit)
	if c.limit == record.MaxTokens {
		limit = fmt.Sprintf("%d tokens, the most kneecap asks (no model's context holds more)", record.MaxTokens)
	}
	return fmt.Sprintf("%d conversations ended at %s: history + max_tokens would exceed %s", total, at, limit)
}
