package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/kneecap/kneecap/rundir"
)

// formatJSON is --format json: analysis.json on stdout for pipelines, everything else
// (the console summary, progress, warnings) on stderr.
const formatJSON = "json"

// formatFlag defines --format on fs.
func formatFlag(fs *flag.FlagSet) *string {
	return fs.String("format", "text", "stdout `format`: text (the console summary) or json (analysis.json; the summary on stderr)")
}

// checkFormat returns a usage error of cmd for a --format other than text or json.
func checkFormat(cmd, f string) error {
	if f != "text" && f != formatJSON {
		return cmdUsageError(cmd, "%s: --format %q: want text or json", cmd, f)
	}
	return nil
}

// forFormat returns the env the command's reports print to: e itself, or with --format json
// e with stdout sent to stderr.
func forFormat(e *env, f string) *env {
	if f != formatJSON {
		return e
	}
	c := *e
	c.stdout = e.stderr
	return &c
}

// printAnalysis copies dir's analysis.json to e's stdout under --format json.
func printAnalysis(e *env, f, dir string) error {
	if f != formatJSON {
		return nil
	}
	b, err := os.ReadFile(filepath.Join(dir, rundir.AnalysisFile))
	if err != nil {
		return fmt.Errorf("--format json: %w", err)
	}
	w := e.stdout
	if lw, ok := w.(lineWrapper); ok {
		w = lw.w // JSON is never word-wrapped, not even on a terminal
	}
	_, err = w.Write(b)
	return err
}
