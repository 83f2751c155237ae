package launch

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
	"github.com/kneecap/kneecap/workload/hftokenizer/hftest"
)

// TestHungSizingTokenizer: after a preflight whose probe failed, a sweep with
// workload.tokenizer sizes its prompts with the file and sends nothing, noting that the chat
// template is not counted; the note names the probe's failure by its cause: no answer, or an
// overlong stream, which did answer (before: sized in words, the tokenizer ignored, and every
// failure "did not answer").
func TestHungSizingTokenizer(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		class record.ErrorClass
		why   string
	}{
		{record.ErrTimeout, "the server did not answer the preflight's probe"},
		{record.ErrOverlong, "the preflight's probe streamed past its max_tokens"},
	} {
		t.Run(string(c.class), func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			s, tg := budgetSweep(t, budgetServer(t, false, false, false), &log)
			p := filepath.Join(t.TempDir(), "tokenizer.json")
			if err := hftest.WriteSubwordTokenizer(p); err != nil {
				t.Fatal(err)
			}
			s.Cfg.Workload.Tokenizer = p
			if err := s.loadTokenizer(); err != nil {
				t.Fatal(err)
			}
			var err error
			if s.workload, err = workload.NewWorkload(s.Cfg.Workload, s.Cfg.Target.API); err != nil {
				t.Fatal(err)
			}
			s.hungClass = c.class
			if err := s.sizePrompts(context.Background(), tg, true); err != nil {
				t.Fatal(err)
			}
			got := log.String()
			if s.sizing == nil || s.sizing.Method != record.SizingTokenizer || !strings.Contains(got, "the chat template is not counted (no probe requests)") ||
				!strings.Contains(got, c.why+": prompts are sized with workload.tokenizer alone") {
				t.Errorf("sizing %v, log:\n%s\nwant the tokenizer, no probe, noting %q", s.sizing, got, c.why)
			}
		})
	}
}
