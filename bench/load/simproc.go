package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The simulator child process: `kneecap sim --profile fixed`, built from the module unless
// -kneecap names a binary, started, asked for its URL and stopped.

// simCommand makes the command that serves the simulator with the given `kneecap sim`
// arguments; tests replace it to avoid building the binary.
type simCommand func(ctx context.Context, args []string) *exec.Cmd

// buildKneecap builds ./cmd/kneecap of the module containing the working directory into bin.
func buildKneecap(ctx context.Context, bin string) error {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("load: go env GOMOD: %w", err)
	}
	mod := strings.TrimSpace(string(out))
	if mod == "" || mod == os.DevNull {
		return errors.New("load: not inside the kneecap module: run from the repository or pass -kneecap")
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/kneecap")
	cmd.Dir = filepath.Dir(mod)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("load: go build ./cmd/kneecap: %w\n%s", err, out)
	}
	return nil
}

// servingLine matches the line `kneecap sim` prints once it listens.
var servingLine = regexp.MustCompile(`serving (http://\S+)`)

// simProc is the simulator child process.
type simProc struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{} // closed when the stderr reader has finished
}

// startSim starts the simulator and waits (≤ 30 s) for it to print its URL; the rest of its
// stderr is copied to stderr.
func startSim(ctx context.Context, newSim simCommand, args []string, stderr io.Writer) (*simProc, error) {
	cmd := newSim(ctx, args)
	pipe, err := cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("load: simulator: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("load: start simulator: %w", err)
	}
	sp := &simProc{cmd: cmd, done: make(chan struct{})}
	urlc := make(chan string, 1)
	go func() {
		defer close(sp.done)
		sc := bufio.NewScanner(pipe)
		found := false
		for sc.Scan() {
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil && !found {
				found = true
				urlc <- m[1]
				continue
			}
			fmt.Fprintln(stderr, "sim:", sc.Text())
		}
		_, _ = io.Copy(io.Discard, pipe)
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case sp.url = <-urlc:
		return sp, nil
	case <-sp.done:
		sp.stop()
		return nil, errors.New("load: simulator exited before serving")
	case <-t.C:
	case <-ctx.Done():
	}
	sp.stop()
	return nil, errors.New("load: simulator did not report its URL within 30 s")
}

// stop interrupts the simulator, kills it if it has not exited 5 s later, and waits for it.
func (sp *simProc) stop() {
	_ = sp.cmd.Process.Signal(os.Interrupt)
	exited := make(chan struct{})
	go func() {
		<-sp.done // Wait must follow the last read from the pipe
		_ = sp.cmd.Wait()
		close(exited)
	}()
	t := time.NewTimer(5 * time.Second)
	defer t.Stop()
	select {
	case <-exited:
		return
	case <-t.C:
	}
	_ = sp.cmd.Process.Kill()
	<-exited
}
