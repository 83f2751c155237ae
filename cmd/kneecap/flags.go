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

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/redact"
)

// cmdUsageError is a usage error of the command line of cmd ("" for kneecap itself): main
// prints it, then "see kneecap CMD -h" (exit 2).
func cmdUsageError(cmd, format string, args ...any) error {
	see := "kneecap -h"
	if cmd != "" {
		see = "kneecap " + cmd + " -h"
	}
	return &exitError{Code: exitUsage, Err: fmt.Errorf(format, args...), See: see}
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
	if errors.As(err, &ee) && ee.See != "" {
		fmt.Fprintln(w, "kneecap: see "+ee.See)
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

// sloFlags are the SLO flags of analyze and sweep: --slo METRIC:PCT:DURATION (repeatable;
// the objectives given replace the configuration's and the defaults) and the older
// --slo-ttft-p95, --slo-tpot-p95 and --slo-e2e-p95, each overriding its one objective.
type sloFlags struct {
	list            []analysis.Objective
	ttft, tpot, e2e time.Duration
}

// sloListValue is the repeatable --slo flag.
type sloListValue struct{ p *[]analysis.Objective }

func (v sloListValue) Set(s string) error {
	o, err := analysis.ParseObjective(s, config.ParseDuration)
	if err != nil {
		return err
	}
	*v.p = append(*v.p, o)
	return nil
}

func (v sloListValue) String() string {
	if v.p == nil {
		return ""
	}
	var parts []string
	for _, o := range *v.p {
		parts = append(parts, fmt.Sprintf("%s:p%d:%s", o.Metric, o.Percentile, o.Max))
	}
	return strings.Join(parts, ",")
}

// register defines the flags on fs; what overrides says what they override.
func (f *sloFlags) register(fs *flag.FlagSet, overrides string) {
	fs.Var(sloListValue{&f.list}, "slo", "SLO `METRIC:PCT:D`, such as ttft:p99:2s: a p50, p95 or p99 of ttft, tpot, itl or e2e; repeatable; the SLOs given replace "+overrides+" and the defaults")
	durationVar(fs, &f.ttft, "slo-ttft-p95", 0, "TTFT p95 SLO `duration` (overrides "+overrides+"; 0 = not used)")
	durationVar(fs, &f.tpot, "slo-tpot-p95", 0, "TPOT p95 SLO `duration` (overrides "+overrides+"; 0 = not used)")
	durationVar(fs, &f.e2e, "slo-e2e-p95", 0, "E2E p95 SLO `duration` (overrides "+overrides+"; 0 = not used)")
}

// given reports whether some SLO flag is among the flags set.
func (f *sloFlags) given(set map[string]bool) bool {
	return set["slo"] || set["slo-ttft-p95"] || set["slo-tpot-p95"] || set["slo-e2e-p95"]
}

// negative reports whether an SLO flag is negative.
func (f *sloFlags) negative() bool {
	return f.ttft < 0 || f.tpot < 0 || f.e2e < 0
}

// apply returns slo with the flags set applied: the --slo objectives in place of slo's, then
// each --slo-*-p95 given.
func (f *sloFlags) apply(slo analysis.SLO, set map[string]bool) analysis.SLO {
	if set["slo"] {
		slo = analysis.SLO{}
		for _, o := range f.list {
			_ = slo.Set(o) // ParseObjective returned only objectives SLO has
		}
	}
	if set["slo-ttft-p95"] {
		slo.TTFTP95 = f.ttft
	}
	if set["slo-tpot-p95"] {
		slo.TPOTP95 = f.tpot
	}
	if set["slo-e2e-p95"] {
		slo.E2EP95 = f.e2e
	}
	return slo
}

// stringList is a repeatable string flag: each use appends its value.
type stringList []string

func (l *stringList) Set(s string) error {
	*l = append(*l, s)
	return nil
}

// String lists the values given without their credentials (a URL may hold a token).
func (l *stringList) String() string {
	if l == nil {
		return ""
	}
	var out []string
	for _, s := range *l {
		out = append(out, redact.URL(s))
	}
	return strings.Join(out, ",")
}
