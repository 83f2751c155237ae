package openai

import (
	"encoding/json"
)

// The allocation-free path of the Responses and Messages decoders: their answer and reasoning
// deltas, the events of every token, scanned as scanChunk scans chat's chunks. On anything
// else, or anything the scanner does not read exactly as encoding/json would (a key with an
// escape or a non-ASCII byte, a duplicate key, a value of another type), it declines and the
// decoder's encoding/json path decides; FuzzResponsesEvents and FuzzMessagesEvents check that
// both say the same.

// decodeEvent decodes payload into *ev, zeroed first: by scan when it takes the payload,
// else by encoding/json (a payload it cannot decode is a bad chunk).
func decodeEvent[E any](payload []byte, ev *E, scan func([]byte, *E) bool) error {
	var zero E
	*ev = zero
	if scan(payload, ev) {
		return nil
	}
	if err := json.Unmarshal(payload, ev); err != nil {
		return badChunk(err, payload)
	}
	return nil
}

// scanResponsesDelta fills ev from a Responses delta event ({"type": a text, reasoning or
// tool-call arguments delta type, "delta": a string, other keys but response, code and message}); ok is false,
// and ev left as it was, on any other payload.
func scanResponsesDelta(b []byte, ev *responsesEvent) (ok bool) {
	s := scanner{b: b}
	var typ responsesType
	var delta jsonText
	ms := []member{{name: "type", set: typ.UnmarshalJSON}, {name: "delta", set: delta.UnmarshalJSON}}
	s.ws()
	if !s.members(ms, "response", "code", "message") || !s.end() || (typ != respTextDelta && typ != respReasoningDelta && typ != respToolDelta) {
		return false
	}
	ev.Type, ev.Delta = typ, delta
	return true
}

// scanMessagesDelta fills ev from a Messages content_block_delta event ({"type":
// "content_block_delta", "delta": {"type", "text", "thinking", "partial_json", other keys}, other keys but
// message, usage and error}); ok is false, and ev left as it was, on any other payload.
func scanMessagesDelta(b []byte, ev *messagesEvent) (ok bool) {
	s := scanner{b: b}
	var typ messagesType
	var dt deltaType
	var text jsonText
	var thinking, partial jsonText
	delta := []member{{name: "type", set: dt.UnmarshalJSON}, {name: "text", set: text.UnmarshalJSON}, {name: "thinking", set: thinking.UnmarshalJSON},
		{name: "partial_json", set: partial.UnmarshalJSON}}
	ms := []member{{name: "type", set: typ.UnmarshalJSON}, {name: "delta", obj: delta}}
	s.ws()
	if !s.members(ms, "message", "usage", "error") || !s.end() || typ != msgBlockDelta {
		return false
	}
	ev.Type = typ
	ev.Delta.Type, ev.Delta.Text, ev.Delta.Thinking, ev.Delta.Partial = dt, text, thinking, partial
	return true
}

// member is a key an event scanner reads, at most once: a string value, handed with its
// quotes to set (a field's UnmarshalJSON, which takes any string), or an object of the
// members obj; a value of another type declines.
type member struct {
	name string
	set  func([]byte) error
	obj  []member
	seen bool
}

// members scans an object, reading the keys of ms and skipping the values of the others; a
// key of refuse, or one of ms twice, declines.
func (s *scanner) members(ms []member, refuse ...string) bool {
	return s.object(func(key []byte) bool {
		for _, r := range refuse {
			if keyIs(key, r) {
				return false
			}
		}
		for i := range ms {
			m := &ms[i]
			if !keyIs(key, m.name) {
				continue
			}
			if m.seen {
				return false
			}
			m.seen = true
			if m.obj != nil {
				return s.members(m.obj)
			}
			raw, _, ok := s.str()
			return ok && m.set(raw) == nil
		}
		_, good := s.value()
		return good
	})
}

// end skips white space and reports whether the payload ends there.
func (s *scanner) end() bool {
	s.ws()
	return s.i == len(s.b)
}
