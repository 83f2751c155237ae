package openai

import (
	"bytes"
	"strconv"
)

// scanChunk decodes the common chat.completion.chunk and text_completion payloads without
// reflection or allocation. ok is false when the payload is not valid JSON, is not an
// object, nests deeper than maxScanDepth, has a key with an escape or a non-ASCII byte
// (encoding/json unescapes keys and matches them with Unicode case folding), has a known
// field of an unexpected type, or is an error event; the caller then uses encoding/json.
// When ok is true the result equals chunkDecoder.decodeSlow's.
//
// Known fields, matched case-insensitively like encoding/json: object, error, usage
// {prompt_tokens, completion_tokens, completion_tokens_details {reasoning_tokens},
// prompt_tokens_details {cached_tokens}}, choices[]
// {text, delta {content, reasoning_content, reasoning}}. Like the reflective decoder, the
// content fields count when they are non-empty strings, null counts as empty, and the last of
// duplicate keys wins; a content field of another type declines (the reflective decoder fails
// it, naming the field: notString).
func scanChunk(b []byte) (chunkResult, bool) {
	s := scanner{b: b}
	var (
		r                 chunkResult
		ok                = true
		isErrObj          bool
		sawChoices, sawUs bool
	)
	s.ws()
	if !s.object(func(key []byte) bool {
		switch {
		case keyIs(key, "choices"):
			if sawChoices {
				return false // duplicates merge in encoding/json: leave them to it
			}
			sawChoices = true
			return s.choices(&r)
		case keyIs(key, "usage"):
			if sawUs {
				return false
			}
			sawUs = true
			u, good := s.usage()
			r.usage = u // null or {} leaves no usage, as in decodeSlow
			return good
		case keyIs(key, "object"):
			v, good := s.value()
			isErrObj = string(v) == `"error"`
			return good
		case keyIs(key, "error"):
			v, good := s.value()
			if good && string(v) != "null" {
				ok = false // an error event: decodeSlow builds the APIError
			}
			return good
		}
		_, good := s.value()
		return good
	}) {
		return chunkResult{}, false
	}
	s.ws()
	if s.i != len(s.b) || !ok || isErrObj {
		return chunkResult{}, false
	}
	return r, true
}

// maxScanDepth bounds the nesting scanChunk follows; deeper payloads go to encoding/json.
const maxScanDepth = 32

// scanner is a strict JSON scanner over one payload.
type scanner struct {
	b     []byte
	i     int
	depth int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// object scans an object, calling field for each key with s positioned at the value; field
// must consume the value and report success.
func (s *scanner) object(field func(key []byte) bool) bool {
	return s.container('{', '}', field, nil)
}

// array scans an array, calling elem with s positioned at each element.
func (s *scanner) array(elem func() bool) bool { return s.container('[', ']', nil, elem) }

// container scans an object (open '{', close '}': each member's key read and handed to field,
// s at its value) or an array ('[' and ']': elem called with s at each element); field or
// elem must consume the value and report success.
func (s *scanner) container(open, close byte, field func(key []byte) bool, elem func() bool) bool {
	if s.i >= len(s.b) || s.b[s.i] != open {
		return false
	}
	s.depth++
	if s.depth > maxScanDepth {
		return false
	}
	s.i++
	s.ws()
	if s.i < len(s.b) && s.b[s.i] == close {
		s.i++
		s.depth--
		return true
	}
	for {
		s.ws()
		if field != nil {
			key, plain, ok := s.str()
			if !ok || !plain {
				return false
			}
			s.ws()
			if s.i >= len(s.b) || s.b[s.i] != ':' {
				return false
			}
			s.i++
			s.ws()
			if !field(key[1 : len(key)-1]) {
				return false
			}
		} else if !elem() {
			return false
		}
		s.ws()
		if s.i >= len(s.b) {
			return false
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case close:
			s.i++
			s.depth--
			return true
		default:
			return false
		}
	}
}

// str scans a string and returns it with its quotes; plain reports that it has no escapes
// and only ASCII bytes.
func (s *scanner) str() (raw []byte, plain, ok bool) {
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i
	s.i++
	plain = true
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			s.i++
			return s.b[start:s.i], plain, true
		case c < 0x20:
			return nil, false, false
		case c == '\\':
			plain = false
			s.i++
			if s.i >= len(s.b) {
				return nil, false, false
			}
			switch s.b[s.i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i++
			case 'u':
				if s.i+5 > len(s.b) {
					return nil, false, false
				}
				for _, h := range s.b[s.i+1 : s.i+5] {
					if !isHex(h) {
						return nil, false, false
					}
				}
				s.i += 5
			default:
				return nil, false, false
			}
		default:
			if c >= 0x80 {
				plain = false
			}
			s.i++
		}
	}
	return nil, false, false
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// number scans a JSON number and returns its text.
func (s *scanner) number() ([]byte, bool) {
	start := s.i
	if s.i < len(s.b) && s.b[s.i] == '-' {
		s.i++
	}
	switch {
	case s.i < len(s.b) && s.b[s.i] == '0':
		s.i++
	case s.i < len(s.b) && s.b[s.i] >= '1' && s.b[s.i] <= '9':
		s.digits()
	default:
		return nil, false
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if !s.digits() {
			return nil, false
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if !s.digits() {
			return nil, false
		}
	}
	return s.b[start:s.i], true
}

// digits scans one or more decimal digits.
func (s *scanner) digits() bool {
	start := s.i
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}

// value scans any JSON value and returns its text.
func (s *scanner) value() ([]byte, bool) {
	if s.i >= len(s.b) {
		return nil, false
	}
	start := s.i
	ok := false
	switch c := s.b[s.i]; {
	case c == '{':
		ok = s.object(func([]byte) bool { _, good := s.value(); return good })
	case c == '[':
		ok = s.array(func() bool { _, good := s.value(); return good })
	case c == '"':
		_, _, ok = s.str()
	case c == '-' || c >= '0' && c <= '9':
		_, ok = s.number()
	default:
		for _, lit := range [...]string{"null", "true", "false"} {
			if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
				s.i += len(lit)
				ok = true
				break
			}
		}
	}
	if !ok {
		return nil, false
	}
	return s.b[start:s.i], true
}

// nonEmptyString reports whether v is a string other than "", the nonEmpty rule.
func nonEmptyString(v []byte) bool { return len(v) > 2 && v[0] == '"' }

// textValue reports whether v may be a text field's value: a string or null (notString).
func textValue(v []byte) bool { return len(v) > 0 && (v[0] == '"' || v[0] == 'n') }

// choices scans the choices array (or null) and sets r.answer when a choice carries
// non-empty text or delta content, r.reasoning when one carries non-empty delta reasoning
// content.
func (s *scanner) choices(r *chunkResult) bool {
	if s.isNull() {
		return true
	}
	return s.array(func() bool {
		if s.isNull() {
			return true
		}
		var text, answer, reasoning, progress, sawDelta bool
		var tv, cv []byte // the raw text and delta.content, when non-empty
		ok := s.object(func(key []byte) bool {
			switch {
			case keyIs(key, "text"):
				v, good := s.value()
				text = nonEmptyString(v)
				tv = v
				return good && textValue(v)
			case keyIs(key, "delta"):
				if sawDelta {
					return false // duplicates merge in encoding/json
				}
				sawDelta = true
				if s.isNull() {
					return true
				}
				var c, rc, rs, tc, fc bool
				good := s.object(func(key []byte) bool {
					v, good := s.value()
					switch {
					case keyIs(key, "tool_calls"):
						tc = toolProgress(v)
						return good
					case keyIs(key, "function_call"):
						fc = toolProgress(v)
						return good
					case keyIs(key, "content"):
						c = nonEmptyString(v)
						cv = v
					case keyIs(key, "reasoning_content"):
						rc = nonEmptyString(v)
					case keyIs(key, "reasoning"):
						rs = nonEmptyString(v)
					default:
						return good
					}
					return good && textValue(v)
				})
				answer, reasoning, progress = c, rc || rs, tc || fc
				return good
			}
			_, good := s.value()
			return good
		})
		r.answer = r.answer || text || answer
		r.reasoning = r.reasoning || reasoning
		r.progress = r.progress || progress
		if answer {
			r.reply, r.replies = cv, r.replies+1
		}
		if text {
			r.reply, r.replies = tv, r.replies+1
		}
		return ok
	})
}

// usage scans the usage object (or null). A count that is absent or null is not set.
func (s *scanner) usage() (u usageCounts, ok bool) {
	if s.isNull() {
		return u, true
	}
	var sawC, sawP, sawD, sawPD bool
	ok = s.object(func(key []byte) bool {
		switch {
		case keyIs(key, "completion_tokens"):
			if sawC {
				return false
			}
			sawC = true
			return s.count(&u.completion)
		case keyIs(key, "prompt_tokens"):
			if sawP {
				return false
			}
			sawP = true
			return s.count(&u.prompt)
		case keyIs(key, "completion_tokens_details"):
			if sawD {
				return false
			}
			sawD = true
			return s.details("reasoning_tokens", &u.reasoning)
		case keyIs(key, "prompt_tokens_details"):
			if sawPD {
				return false
			}
			sawPD = true
			return s.details("cached_tokens", &u.cached)
		}
		_, good := s.value()
		return good
	})
	return u, ok
}

// details scans completion_tokens_details or prompt_tokens_details (or null) for the count
// name. decodeSlow reads these objects leniently; anything but null, an integer or a skipped
// key declines here.
func (s *scanner) details(name string, dst *optCount) bool {
	if s.isNull() {
		return true
	}
	var saw bool
	return s.object(func(key []byte) bool {
		if !keyIs(key, name) {
			_, good := s.value()
			return good
		}
		if saw {
			return false
		}
		saw = true
		return s.count(dst)
	})
}

// count scans a token count: null (encoding/json leaves the field unset) or an integer.
func (s *scanner) count(dst *optCount) bool {
	if s.isNull() {
		return true
	}
	v, good := s.number()
	if !good {
		return false
	}
	n, err := strconv.Atoi(string(v)) // no allocation: the conversion does not escape
	if err != nil {
		return false // a fraction, an exponent or out of range: encoding/json fails it
	}
	*dst = optCount{n: n, set: true}
	return true
}

// isNull consumes a null literal if one is next.
func (s *scanner) isNull() bool {
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// keyIs matches a plain-ASCII key like encoding/json does: ASCII case-insensitively.
func keyIs(key []byte, name string) bool {
	return bytes.EqualFold(key, []byte(name))
}
