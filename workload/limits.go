package workload

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"github.com/kneecap/kneecap/record"
)

// Sizes read from an input file (a dataset entry, a trace row, a conversation's history) are
// checked where they are read, against the same limit as the configuration's lengths:
// record.MaxTokens. A length past it is refused, naming the file's line, the field, the value
// and the limit, before anything of that size is allocated (DESIGN §7).

// tooLong is the problem of a length n (tokens, or words counted as tokens) of what,
// past record.MaxTokens; "" otherwise, NaN included (the configuration's checks name it).
func tooLong(what string, n float64) string {
	if !(n > record.MaxTokens) {
		return ""
	}
	return fmt.Sprintf("%s is %s: must be ≤ %d tokens (no model's context holds more)", what, number(n), record.MaxTokens)
}

// number writes n for a message: every digit below 10¹⁵ (10000001, not 1e+07, which reads as
// the limit itself), else in four significant digits with an exponent.
func number(n float64) string {
	if math.Abs(n) < 1e15 {
		return strconv.FormatFloat(n, 'f', -1, 64)
	}
	return fmt.Sprintf("%.4g", n)
}

// tokenField reads the token count of field name from v, as a trace's CSV cell or a JSON
// number (jsonCount) writes it: a whole number in [least, record.MaxTokens], in any decimal
// spelling whose value is whole (472, 472.0 as a trace re-saved through pandas writes it,
// 5.0e0, 1e3); else an error naming the field, the value as written and the limit. A
// fraction (472.5) and what is no decimal number (0x1p3, 1_0, Inf, "") are refused; a count
// too big is refused for its size, however it is spelled (1e12).
func tokenField(name, v string, least int) (int, error) {
	n, err := strconv.Atoi(v)
	big := errors.Is(err, strconv.ErrRange) && !strings.HasPrefix(v, "-")
	if err != nil && !big && v != "" && strings.Trim(v, "0123456789.eE+-") == "" {
		f, ferr := strconv.ParseFloat(v, 64) // past float64's range: ±Inf and ErrRange
		switch {
		case (ferr == nil || errors.Is(ferr, strconv.ErrRange)) && f > record.MaxTokens:
			big = true
		case ferr == nil && f == math.Trunc(f):
			n, err = int(f), nil
		}
	}
	switch {
	case big || err == nil && n > record.MaxTokens:
		return 0, fmt.Errorf("%s is %s: must be ≤ %d tokens (no model's context holds more)", name, asWritten(v), record.MaxTokens)
	case err != nil || n < least:
		return 0, fmt.Errorf("%s %s: want a whole number of tokens in [%d, %d]", name, asWritten(v), least, record.MaxTokens)
	}
	return n, nil
}

// asWritten is a value v read from a file for a message: as it is when it has only a
// number's characters, else quoted and cut at 40 bytes.
func asWritten(v string) string {
	if v != "" && strings.Trim(v, "0123456789.eE+-") == "" {
		return v
	}
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return strconv.Quote(v)
}

// jsonCount is a token count of a JSON input (a dataset's max_tokens, a Mooncake trace's
// lengths) as the file writes the number, for tokenField; a value of another type (a string,
// "5") is refused as an int field refuses it.
type jsonCount string

// UnmarshalJSON implements json.Unmarshaler.
func (c *jsonCount) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && (b[0] == '-' || '0' <= b[0] && b[0] <= '9') {
		*c = jsonCount(b)
		return nil
	}
	if string(b) == "null" {
		return nil
	}
	kind := map[byte]string{'"': "string", '{': "object", '[': "array", 't': "bool", 'f': "bool"}[b[0]]
	return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[int]()}
}

// wordCount is len(strings.Fields(s)) without building the fields: a dataset's prompt or reply
// may be a line of 64 MiB, whose fields would take 16 bytes a word.
func wordCount(s string) int {
	n, in := 0, false
	for _, r := range s {
		if unicode.IsSpace(r) {
			in = false
		} else if !in {
			in = true
			n++
		}
	}
	return n
}
