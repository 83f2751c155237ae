package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis/analysistest"
)

// cancelOn is a writer that cancels the interrupt once a line containing sub is written to it:
// an interrupt delivered at that moment of a command, with no sleep.
type cancelOn struct {
	w      io.Writer
	sub    string
	cancel context.CancelFunc
}

func (c cancelOn) Write(p []byte) (int, error) {
	if strings.Contains(string(p), c.sub) {
		c.cancel()
	}
	return c.w.Write(p)
}

// TestInterruptEndsAnalyzeAndCompare: an interrupt ends analyze — once its input is read,
// before the summaries, fits and charts — and compare with exit 130 (DESIGN §7), and neither
// writes anything (before: analyze ran on through SIGINT, killed at 60 s with --bootstrap 10⁹).
func TestInterruptEndsAnalyzeAndCompare(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	out := filepath.Join(tmp, "analysis")
	e, _, stderr := testEnv()
	ictx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.interrupt, e.stderr = ictx, cancelOn{w: stderr, sub: "analyzing its summary.csv", cancel: cancel}
	err := run(context.Background(), e, []string{"analyze", filepath.Join("..", "..", "examples", "sample-run"), "-o", out, "--bootstrap", "100000"})
	if exitCode(err) != exitInterrupted || !strings.Contains(errString(err), "analyze interrupted: nothing written") {
		t.Errorf("analyze interrupted after reading: exit %d (%v), want %d, nothing written\nstderr:\n%s", exitCode(err), err, exitInterrupted, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("an interrupted analyze created %s", out)
	}

	runs := []string{filepath.Join(tmp, "a"), filepath.Join(tmp, "b")}
	for _, d := range runs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := writeAnalysis(d, analysistest.Saturating()); err != nil {
			t.Fatal(err)
		}
	}
	cmp := filepath.Join(tmp, "cmp")
	e, _, _ = testEnv()
	e.interrupt = ictx // already done
	err = run(context.Background(), e, []string{"compare", runs[0], runs[1], "-o", cmp})
	if exitCode(err) != exitInterrupted || !strings.Contains(errString(err), "compare interrupted: nothing written") {
		t.Errorf("interrupted compare: exit %d (%v), want %d, nothing written", exitCode(err), err, exitInterrupted)
	}
	if _, err := os.Stat(cmp); err == nil {
		t.Errorf("an interrupted compare created %s", cmp)
	}
}
