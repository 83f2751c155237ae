package openai

import (
	"encoding/json"
	"fmt"
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
		return fmt.Errorf("%w: %w: %q", errBadChunk, err, truncate(payload, 120))
	}
	return nil
}

// scanResponsesDelta fills ev from a Responses delta event ({"type": a text or reasoning
// delta type, "delta": a string, other keys but response, code and message}); ok is false,
// and ev left as it was, on any other payload.
func scanResponsesDelta(b []byte, ev *responsesEvent) (ok bool) {
	s := scanner{b: b}
	var typ responsesType
	var delta jsonText
	sawType, sawDelta := false, false
	if !s.whole(func(key []byte) bool {
		switch {
		case keyIs(key, "type"):
			return !sawType && s.text(&sawType, typ.UnmarshalJSON)
		case keyIs(key, "delta"):
			return !sawDelta && s.text(&sawDelta, delta.UnmarshalJSON)
		case keyIs(key, "response"), keyIs(key, "code"), keyIs(key, "message"):
			return false
		}
		_, good := s.value()
		return good
	}) || (typ != respTextDelta && typ != respReasoningDelta) {
		return false
	}
	ev.Type, ev.Delta = typ, delta
	return true
}

// scanMessagesDelta fills ev from a Messages content_block_delta event ({"type":
// "content_block_delta", "delta": {"type", "text", "thinking", other keys}, other keys but
// message, usage and error}); ok is false, and ev left as it was, on any other payload.
func scanMessagesDelta(b []byte, ev *messagesEvent) (ok bool) {
	s := scanner{b: b}
	var typ messagesType
	var dt deltaType
	var text jsonText
	var thinking nonEmpty
	sawType, sawDelta := false, false
	if !s.whole(func(key []byte) bool {
		switch {
		case keyIs(key, "type"):
			return !sawType && s.text(&sawType, typ.UnmarshalJSON)
		case keyIs(key, "delta"):
			if sawDelta {
				return false
			}
			sawDelta = true
			var sawT, sawX, sawK bool
			return s.object(func(key []byte) bool {
				switch {
				case keyIs(key, "type"):
					return !sawT && s.text(&sawT, dt.UnmarshalJSON)
				case keyIs(key, "text"):
					return !sawX && s.text(&sawX, text.UnmarshalJSON)
				case keyIs(key, "thinking"):
					return !sawK && s.text(&sawK, thinking.UnmarshalJSON)
				}
				_, good := s.value()
				return good
			})
		case keyIs(key, "message"), keyIs(key, "usage"), keyIs(key, "error"):
			return false
		}
		_, good := s.value()
		return good
	}) || typ != msgBlockDelta {
		return false
	}
	ev.Type = typ
	ev.Delta.Type, ev.Delta.Text, ev.Delta.Thinking = dt, text, thinking
	return true
}

// whole scans the payload as one object (white space around it), calling field for each key
// as object does.
func (s *scanner) whole(field func(key []byte) bool) bool {
	s.ws()
	if !s.object(field) {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// text scans a string value and hands it, quotes included, to set (a field's UnmarshalJSON,
// which takes any string), marking it seen; a value of another type declines.
func (s *scanner) text(seen *bool, set func([]byte) error) bool {
	raw, _, ok := s.str()
	if !ok {
		return false
	}
	*seen = true
	return set(raw) == nil
}
