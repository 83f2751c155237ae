package openai

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// retryAfter is the wait a Retry-After header value v asks for (RFC 9110 §10.2.3: delay
// seconds, or an HTTP date, from now), capped at record.MaxRetryAfter; 0 for none, a date in
// the past, or a value that is neither.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 64); err == nil || errors.Is(err, strconv.ErrRange) {
		if err != nil || n >= uint64(record.MaxRetryAfter/time.Second) {
			return record.MaxRetryAfter
		}
		d = time.Duration(n) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	return min(max(d, 0), record.MaxRetryAfter)
}
