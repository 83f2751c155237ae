package workload

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
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

// tokenField reads the token count of field name from a JSON number v: an integer in
// [least, record.MaxTokens]; else an error naming the field, the value as written and the
// limit. A number JSON spells with an exponent (1e12) is read too, so that it is refused for
// its size, not for its spelling.
func tokenField(name string, v json.Number, least int) (int, error) {
	f, err := v.Float64()
	switch {
	case err != nil || math.IsInf(f, 0):
		return 0, fmt.Errorf("%s %q: want a token count in [%d, %d]", name, string(v), least, record.MaxTokens)
	case f > record.MaxTokens:
		return 0, fmt.Errorf("%s is %s: must be ≤ %d tokens (no model's context holds more)", name, v, record.MaxTokens)
	case f < float64(least) || f != math.Trunc(f):
		return 0, fmt.Errorf("%s %s: want a token count in [%d, %d]", name, v, least, record.MaxTokens)
	}
	return int(f), nil
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
