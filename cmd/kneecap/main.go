// Command kneecap finds where an LLM inference service saturates: it steps concurrency upward
// against an OpenAI-compatible streaming endpoint, measures each level at steady state, fits
// throughput models to find the knee and the TTFT blow-up, and writes charts and a report.
//
// Usage:
//
//	kneecap sweep   [-c FILE] [-o DIR] [--url URL] [--model M] [--levels 1,2,4,...] ...
//	kneecap analyze PATH [-o DIR] [--slo-ttft-p95 D] [--slo-tpot-p95 D] [--knee-gain F]
//	kneecap compare RUN... -o DIR [--max-regression PCT]
//	kneecap merge   SHARD_DIR... -o DIR
//	kneecap sim     [--addr 127.0.0.1:8000] [--profile demo|fixed|seed-article] [-c FILE]
//	kneecap version
//
// Exit codes: 0 ok, 1 failure, 2 usage or configuration error, 3 target unreachable,
// 4 regression (compare --max-regression; everything written), 130 interrupted (results
// written). `kneecap sim` stops on SIGINT or SIGTERM with exit 0. docs/design.md §9 is the
// contract.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/internal/launch"
	"github.com/kneecap/kneecap/redact"
)

// Exit codes (DESIGN §9.2), as the command names them.
const (
	exitOK          = exit.OK
	exitFailure     = exit.Failure
	exitUsage       = exit.Usage
	exitUnreachable = exit.Unreachable
	exitRegressed   = exit.Regressed
	exitInterrupted = exit.Interrupted
)

// exitError carries a process exit code with an error (exit.Error).
type exitError = exit.Error

// withCode wraps err so that main exits with code.
func withCode(code int, err error) error { return exit.With(code, err) }

// usageError is a usage or configuration error (exit 2).
func usageError(format string, args ...any) error { return exit.Usagef(format, args...) }

// exitCode maps an error returned by run to the process exit code: -h is 0.
func exitCode(err error) int {
	var ee *exitError
	if !errors.As(err, &ee) && errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exit.Code(err)
}

// env is what a subcommand may use of the process: only main touches os.Exit and signals.
type env struct {
	stdout, stderr io.Writer
	// getenv reads an environment variable.
	getenv func(string) string
	// interrupt is done at the first SIGINT/SIGTERM: stop issuing, drain, write everything
	// measured so far. The ctx passed to a command is cancelled at the second.
	interrupt context.Context
	// stderrTTY reports whether stderr is a terminal (progress bars).
	stderrTTY bool
	// stdoutTTY reports whether stdout is a terminal (the summary's prose wrapped to it).
	stdoutTTY bool
	// termWidth returns the terminal's width in columns, 0 when not known (columns).
	termWidth func() int
	// wide is --wide: every column of the level tables.
	wide bool
}

// launch is what the launch steps use of e: its stderr, environment and interrupt.
func (e *env) launch() launch.Env {
	return launch.Env{Log: e.stderr, Getenv: e.getenv, Interrupt: e.interrupt}
}

// redacting returns e with stdout and stderr passing every line through secrets (DESIGN §7).
func (e *env) redacting(secrets *redact.Secrets) *env {
	c := *e
	c.stdout, c.stderr = secrets.Writer(e.stdout), secrets.Writer(e.stderr)
	return &c
}

func main() {
	hard, cancelHard := context.WithCancel(context.Background())
	defer cancelHard()
	soft, cancelSoft := context.WithCancel(hard)
	defer cancelSoft()
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-sigs
		// The message goes out before the cancel: once soft is done, a command may return
		// and main may exit before this goroutine runs again (sim did, dropping the line).
		fmt.Fprintln(os.Stderr, interruptMessage(os.Args[1:]))
		cancelSoft()
		<-sigs
		cancelHard()
		// A third signal ends the process (Go's default): whatever still runs after the
		// second (a sweep's analysis of what it measured after a hard stop) is not waited for.
		signal.Stop(sigs)
	}()
	e := &env{
		stdout:    os.Stdout,
		stderr:    os.Stderr,
		getenv:    os.Getenv,
		interrupt: soft,
		stderrTTY: isTerminal(os.Stderr),
		stdoutTTY: isTerminal(os.Stdout),
		termWidth: func() int { return fileColumns(os.Stderr) },
	}
	if e.stderrTTY {
		e.stderr = lineWrapper{w: os.Stderr, width: e.columns}
	}
	if e.stdoutTTY {
		e.stdout = lineWrapper{w: os.Stdout, width: e.columns}
	}
	err := run(hard, e, os.Args[1:])
	printError(os.Stderr, err)
	os.Exit(exitCode(err))
}

// interruptMessage is the line main prints at the first SIGINT/SIGTERM. A sweep stops
// issuing and drains, and a second signal cancels the requests in flight; analyze, compare
// and merge end at once; `kneecap sim` is a server, for which a signal is the normal way to
// stop (exit 0).
func interruptMessage(args []string) string {
	if len(args) > 0 && args[0] == "sim" {
		return "kneecap sim: stopping"
	}
	if len(args) > 0 && (args[0] == "analyze" || args[0] == "compare" || args[0] == "merge") {
		return "kneecap: interrupted: stopping" // nothing in flight: they end at once
	}
	return "kneecap: interrupted: stopping (interrupt again to cancel in-flight requests)"
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

const usageText = `kneecap finds where an LLM inference service saturates.

Usage:
  kneecap sweep   [-c FILE] [-o DIR] [--url URL] [--model M] [flags]   measure a concurrency sweep
  kneecap analyze PATH [-o DIR] [flags]                               analyze a run, a CSV or vLLM bench JSON
  kneecap compare RUN... -o DIR [--max-regression PCT]                overlay several runs; a regression gate
  kneecap merge   SHARD_DIR... -o DIR                                 merge the shards of a sweep run by N processes
  kneecap sim     [--addr 127.0.0.1:8000] [--profile demo] [flags]    serve the simulated engine
  kneecap version                                                     print the version

Run 'kneecap COMMAND -h' for a command's flags.
`

// run dispatches a subcommand. It is main without the process: tests call it directly.
func run(ctx context.Context, e *env, args []string) error {
	if len(args) == 0 {
		fmt.Fprint(e.stderr, usageText)
		return exit.Printed(exitUsage)
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "sweep":
		return cmdSweep(ctx, e, rest)
	case "analyze":
		return cmdAnalyze(ctx, e, rest)
	case "compare":
		return cmdCompare(ctx, e, rest)
	case "merge":
		return cmdMerge(ctx, e, rest)
	case "sim":
		return cmdSim(ctx, e, rest)
	case "version", "--version", "-version":
		if len(rest) == 1 && (rest[0] == "-h" || rest[0] == "--help" || rest[0] == "-help") {
			fmt.Fprintln(e.stderr, "Usage: kneecap version\n\nPrints kneecap's module version, the Go version it was built with and, when the build\nrecorded them, the VCS revision and \"(modified)\".")
			return nil
		}
		if len(rest) > 0 {
			return cmdUsageError("version", "version: unexpected argument %q (version takes none)", rest[0])
		}
		bi, ok := debug.ReadBuildInfo()
		fmt.Fprintln(e.stdout, "kneecap", version(bi, ok))
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(e.stdout, usageText)
		return nil
	default:
		return cmdUsageError("", "unknown command %q (commands: sweep, analyze, compare, merge, sim, version, help)", cmd)
	}
}

// version reports the module version and Go version the binary was built with, then the VCS
// revision (12 hex digits) and "(modified)" when the build info records them
// (vcs.revision, vcs.modified; absent with -buildvcs=false or outside a repository):
// "(devel) go1.26.1 rev 0123456789ab (modified)".
func version(bi *debug.BuildInfo, ok bool) string {
	if !ok || bi == nil {
		return "(unknown)"
	}
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	out := fmt.Sprintf("%s %s", bi.Main.Version, bi.GoVersion)
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		out += " rev " + rev
		if modified {
			out += " (modified)"
		}
	}
	return out
}

// prefixed returns "op: err", or err itself when its message already starts with "op: " (the
// sim and sweep packages prefix their errors with their names), so no prefix is doubled.
func prefixed(op string, err error) error {
	if err == nil || strings.HasPrefix(err.Error(), op+": ") {
		return err
	}
	return fmt.Errorf("%s: %w", op, err)
}
