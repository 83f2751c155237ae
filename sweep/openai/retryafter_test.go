package openai

import (
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestRetryAfter: both forms of RFC 9110 §10.2.3 (delay seconds, an HTTP date), capped at
// record.MaxRetryAfter; nonsense, negatives and dates past are no wait.
func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		v    string
		want time.Duration
	}{
		{"", 0}, {"0", 0}, {"30", 30 * time.Second}, {" 2 ", 2 * time.Second},
		{"86400", record.MaxRetryAfter}, {"99999999999999999999", record.MaxRetryAfter}, {"-5", 0}, {"1.5", 0}, {"soon", 0},
		{"Sun, 06 Dec 2026 10:00:20 GMT", 20 * time.Second},
		{"Sun, 06 Dec 2026 09:59:00 GMT", 0},
		{"Mon, 07 Dec 2026 10:00:00 GMT", record.MaxRetryAfter},
	} {
		if got := retryAfter(tc.v, now); got != tc.want {
			t.Errorf("retryAfter(%q) = %v, want %v", tc.v, got, tc.want)
		}
	}
}
