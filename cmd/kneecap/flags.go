package main

// The command line's own errors (DESIGN §9): a flag that does not parse, a missing or extra
// argument. Each is one line naming the flag or argument, then "see kneecap CMD -h", exit 2;
// the usage itself is printed only for -h.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
)

// cmdUsageError is a usage error of the command line of cmd ("" for kneecap itself): main
// prints it, then "see kneecap CMD -h" (exit 2).
func cmdUsageError(cmd, format string, args ...any) error {
	see := "kneecap -h"
	if cmd != "" {
		see = "kneecap " + cmd + " -h"
	}
	return &exitError{code: exitUsage, err: fmt.Errorf(format, args...), see: see}
}

// printError prints err as main does: "kneecap: MESSAGE" (nothing for a bare exit code, whose
// lines were printed already), then "kneecap: see kneecap CMD -h" for a command-line error.
func printError(w io.Writer, err error) {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return
	}
	if msg := err.Error(); msg != "" && msg != fmt.Sprintf("exit %d", exitCode(err)) {
		fmt.Fprintln(w, "kneecap: "+msg)
	}
	var ee *exitError
	if errors.As(err, &ee) && ee.see != "" {
		fmt.Fprintln(w, "kneecap: see "+ee.see)
	}
}

// newFlagSet returns a FlagSet for a subcommand that reports errors instead of exiting; its
// Usage prints the usage and every flag on stderr (for -h).
func newFlagSet(e *env, name, usage string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {
		fmt.Fprintf(e.stderr, "Usage: kneecap %s %s\n\nFlags:\n", name, usage)
		fs.SetOutput(e.stderr)
		defer fs.SetOutput(io.Discard)
		fs.PrintDefaults()
	}
	return fs
}

// parseArgs parses flags that may stand before, between or after positional arguments
// ("analyze PATH -o DIR"), and returns the positional arguments. -h prints the usage and is
// flag.ErrHelp (exit 0); a flag that does not parse is a command-line error naming it (exit
// 2), without the usage.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	usage := fs.Usage
	fs.Usage = func() {} // the flag package calls it at every error; only -h shows it
	defer func() { fs.Usage = usage }()
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				usage()
				return nil, err
			}
			return nil, cmdUsageError(fs.Name(), "%s: %s", fs.Name(), flagProblem(fs, err))
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// flagProblem rewrites an error of the flag package ("invalid value \"5\" for flag -warmup:
// parse error") as what the user wrote wrong: `--warmup: duration needs a unit: write "5s",
// not 5`, `--min-requests: "x" is not an integer`, `-o needs a value`, `--bogus: no such
// flag`.
func flagProblem(fs *flag.FlagSet, err error) string {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return dashes(name) + ": no such flag"
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return dashes(name) + " needs a value"
	}
	rest, ok := strings.CutPrefix(msg, "invalid value ")
	if !ok {
		rest, ok = strings.CutPrefix(msg, "invalid boolean value ")
	}
	if !ok {
		return msg
	}
	q, err2 := strconv.QuotedPrefix(rest)
	value, err3 := strconv.Unquote(q)
	rest = strings.TrimPrefix(strings.TrimPrefix(rest[len(q):], " for flag -"), " for -")
	name, detail, ok := strings.Cut(rest, ": ")
	if err2 != nil || err3 != nil || !ok {
		return msg
	}
	switch detail {
	case "parse error", "value out of range":
		what := "a valid value"
		if f := fs.Lookup(name); f != nil {
			if g, ok := f.Value.(flag.Getter); ok {
				switch g.Get().(type) {
				case int, int64, uint, uint64:
					what = "an integer"
				case float64:
					what = "a number"
				case bool:
					what = "true or false"
				}
			}
		}
		if detail == "value out of range" {
			what += " in range"
		}
		detail = fmt.Sprintf("%q is not %s", value, what)
	}
	return dashes(name) + ": " + detail
}

// dashes writes a flag's name as the documentation does: -o, --warmup.
func dashes(name string) string {
	if len(name) == 1 {
		return "-" + name
	}
	return "--" + name
}

// durationValue is a time.Duration flag that says what is wrong with a value as the
// configuration file does: a bare number needs a unit (config.ParseDuration).
type durationValue struct{ p *time.Duration }

// durationFlag defines a duration flag with default def and returns where its value is kept.
// Its usage should name the value (`duration`): the flag package cannot tell its type.
func durationFlag(fs *flag.FlagSet, name string, def time.Duration, usage string) *time.Duration {
	p := new(time.Duration)
	durationVar(fs, p, name, def, usage)
	return p
}

// durationVar defines a duration flag stored in p, as flag.DurationVar.
func durationVar(fs *flag.FlagSet, p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	fs.Var(&durationValue{p}, name, usage)
}

func (d *durationValue) Set(s string) error {
	v, err := config.ParseDuration(s)
	if err != nil {
		return err
	}
	*d.p = v
	return nil
}

func (d *durationValue) String() string {
	if d == nil || d.p == nil {
		return "0s"
	}
	return d.p.String()
}

func (d *durationValue) Get() any { return *d.p }
