package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/rundir"
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

// TestInterruptWhileRendering: an interrupt that arrives while a comparison renders ends it
// with exit 130 and nothing written — no -o directory either — even before the goroutine of
// untilInterrupt has cancelled the command's context (ctx here carries the interrupt and is
// never cancelled: that moment, held). Before, the files were written, and -o was created
// before the rendering, left empty by an interrupt that said "nothing written".
func TestInterruptWhileRendering(t *testing.T) {
	t.Parallel()
	ictx, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := context.WithValue(context.Background(), interruptKey{}, ictx)
	runs := []*analysis.Result{analysistest.Saturating(), analysistest.Saturating()}
	sub := filepath.Join(t.TempDir(), "cmp", "scenario")
	e, _, _ := testEnv()
	_, err := comparePair(ctx, e, sub, runs, []string{"a", "b"}, -1, "")
	if exitCode(err) != exitInterrupted || !strings.Contains(errString(err), "compare interrupted: nothing written") {
		t.Errorf("compare interrupted while rendering: exit %d (%v), want %d, nothing written", exitCode(err), err, exitInterrupted)
	}
	if _, err := os.Stat(filepath.Dir(sub)); err == nil {
		t.Errorf("an interrupted compare created %s", filepath.Dir(sub))
	}
}

// TestSecondSignalStopsSweepAnalysis: after an interrupted sweep, its analysis stops at the
// second signal (the command's context) with exit 130, saying the records are written and
// that kneecap analyze writes the rest, and writes no analysis or report (before: the
// analysis ignored every signal, however long a --bootstrap made it).
func TestSecondSignalStopsSweepAnalysis(t *testing.T) {
	t.Parallel()
	cfg := writeTestConfig(t, interruptedSweepConfig)
	dir := filepath.Join(t.TempDir(), "run")
	e, stdout, stderr := testEnv()
	soft, cancelSoft := context.WithCancel(context.Background())
	cancelSoft() // the first signal: before the first level
	hard, cancelHard := context.WithCancel(context.Background())
	defer cancelHard()
	e.interrupt = soft
	e.stdout = cancelOn{w: stdout, sub: "levels, stopped: ", cancel: cancelHard} // the second: as the analysis starts
	err := run(hard, e, []string{"sweep", "-c", cfg, "-o", dir})
	want := "sweep interrupted: the records are written to " + dir + "; its analysis and reports are not (kneecap analyze " + dir + " writes them)"
	if exitCode(err) != exitInterrupted || !strings.Contains(errString(err), want) {
		t.Errorf("sweep interrupted twice: exit %d (%v), want %d, %q\nstderr:\n%s", exitCode(err), err, exitInterrupted, want, stderr)
	}
	if _, err := rundir.Read(dir); err != nil {
		t.Errorf("the records of the interrupted sweep: %v", err)
	}
	for _, f := range []string{rundir.AnalysisFile, rundir.ReportHTMLFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			t.Errorf("the sweep's analysis stopped by a second signal wrote %s", f)
		}
	}
}
