package server

import (
	"fmt"
	"strings"
	"testing"
)

// TestModelNotServedErrorClipsServed: the model IDs a server's GET /v1/models lists reach the
// console quoted, without control characters, each clipped to 64 runes and at most 20 of them,
// so that a hostile or odd server cannot move the terminal's cursor or fill the screen.
func TestModelNotServedErrorClipsServed(t *testing.T) {
	served := []string{"\x1b[2Jevil\u202e", strings.Repeat("m", 100)}
	for i := range 23 {
		served = append(served, fmt.Sprintf("lora-%d", i))
	}
	msg := (&ModelNotServedError{Model: "x", Missing: []string{"x"}, Served: served}).Error()
	for _, want := range []string{
		`does not serve model "x"; it serves: "[2Jevil", "` + strings.Repeat("m", 63) + `…", "lora-0", `,
		`"lora-17" and 5 more`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.ContainsFunc(msg, func(r rune) bool { return r < ' ' || r == '\u202e' }) || strings.Contains(msg, "lora-18") {
		t.Errorf("error %q has a control character or too many models", msg)
	}
}
