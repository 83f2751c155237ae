package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
)

// A text field of a chunk (delta.content, text, reasoning_content, a Responses delta, a
// Messages text or thinking) holds a string or null. Any other value ("content": 42) is a
// chunk no server means: a bad chunk naming the field, not an empty one (DESIGN §7).

// stringType is the type a text field's value must have.
var stringType = reflect.TypeFor[string]()

// notString returns nil for a text field's value b that is a string or null, else the
// *json.UnmarshalTypeError encoding/json completes with the field's path.
func notString(b []byte) error {
	if len(b) == 0 || b[0] == '"' || string(b) == "null" {
		return nil
	}
	return &json.UnmarshalTypeError{Value: jsonKind(b), Type: stringType}
}

// jsonKind names the kind of the JSON value b as encoding/json's errors do.
func jsonKind(b []byte) string {
	switch b[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "bool"
	}
	return "number"
}

// badChunk is the error of a payload encoding/json could not decode (err): errBadChunk with
// the payload's first 120 bytes and, for a value of the wrong type, the field by its path in
// the payload ("field choices.delta.content: a number, not a string").
func badChunk(err error, payload []byte) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%w: field %s: %s %s, not %s: %q", errBadChunk, te.Field, article(te.Value), te.Value, kindName(te.Type), truncate(payload, 120))
	}
	return fmt.Errorf("%w: %w: %q", errBadChunk, err, truncate(payload, 120))
}

// article is "an" before a vowel, else "a".
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// kindName names the JSON value a Go type takes: "a string", "an integer", …
func kindName(t reflect.Type) string {
	switch {
	case t == nil:
		return "a value of another type"
	case t.Kind() == reflect.String:
		return "a string"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "an integer"
	case t.Kind() == reflect.Bool:
		return "a boolean"
	case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
		return "a number"
	case t.Kind() == reflect.Slice:
		return "a list"
	}
	return "an object"
}
