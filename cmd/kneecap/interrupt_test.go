package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

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

// TestSIGINTEndsAnalyze: the real binary, a real SIGINT once analyze has read its input
// (--bootstrap 100000: minutes of resampling on two cores): exit 130 within the deadline,
// "nothing written", no output directory (before: it ran on through SIGINT and SIGTERM).
func TestSIGINTEndsAnalyze(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "analysis")
	cmd := kneecapCommand(t, "analyze", filepath.Join("..", "..", "examples", "sample-run"), "-o", out, "--bootstrap", "100000")
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	var stderr strings.Builder
	lines := bufio.NewScanner(pipe)
	for lines.Scan() { // ends at the process's exit at the latest
		stderr.WriteString(lines.Text() + "\n")
		if strings.Contains(lines.Text(), "analyzing its summary.csv") {
			break
		}
	}
	if err := syscall.Kill(cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go func() {
		for lines.Scan() {
			stderr.WriteString(lines.Text() + "\n")
		}
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(deadline):
		t.Fatalf("analyze did not exit within %v of SIGINT", deadline)
	}
	if code := cmd.ProcessState.ExitCode(); code != exitInterrupted || !strings.Contains(stderr.String(), "analyze interrupted: nothing written") {
		t.Errorf("exit %d, want %d, nothing written\nstderr:\n%s", code, exitInterrupted, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Errorf("an interrupted analyze created %s", out)
	}
}
