package summary

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/kneecap/kneecap/analysis"
)

// CSVFile is the name of a results directory's level-summary CSV.
const CSVFile = "summary.csv"

// Kind is the kind of input Load found at a path.
type Kind int

const (
	// resultsDir is a results directory with its records (records.jsonl), or one that
	// measured no level: its levels are summarized from the records.
	resultsDir Kind = iota + 1
	// ResultsSummary is a results directory without records.jsonl (examples/sample-run, or a
	// run whose records were deleted): its levels are read from its summary.csv.
	ResultsSummary
	// vllmBench is a directory of vLLM bench serve result JSON files (readVLLMBench).
	vllmBench
	// CSV is a level-summary CSV file (ReadCSV).
	CSV
)

// ErrInPlace is wrapped by the error of Load asked to read a ResultsSummary input for an
// analysis written into the directory itself: its analysis.json, computed from the records,
// would be replaced by one computed from their summary.
var ErrInPlace = errors.New("summary: a results directory without its records is not analyzed in place")

// Input is what Load read at a path: level summaries (or the records to summarize), the
// run's description and the analysis options of its configuration.
type Input struct {
	// Kind is the kind of input found at Path.
	Kind Kind
	// Path is the path read.
	Path string
	// Meta describes the run for the reports: a results directory's name, model, endpoint,
	// date, stop reason, load generators, server and kneecap version; vLLM's model, backend
	// and date; a CSV file's path and base name without extension.
	Meta analysis.Meta
	// Options are the analysis options of a results directory's configuration
	// (Config.AnalysisOptions), analysis.DefaultOptions() for the other kinds. Callers override them
	// (flags) before passing them to Levels or Analyze.
	Options analysis.Options
	// Warnings are the input's own warnings (lines of records.jsonl left out, see
	// rundir.Dropped; *.json files of a vLLM directory that are not vLLM results); Analyze
	// puts them before the analysis's.
	Warnings []string
	// Why says why a ResultsSummary input is read from its summary.csv: "DIR has no
	// records.jsonl", "DIR: levels.json lists 3 levels, but records.jsonl is empty".
	Why string

	levels    []analysis.Level                        // the summaries as read
	summarize func(analysis.Options) []analysis.Level // a results directory's records
}

// InPlace reports whether the analysis of the input may be written into Path itself: only
// for a results directory with its records, whose analysis.json and summary.csv are
// recomputed from them.
func (in *Input) InPlace() bool { return in.Kind == resultsDir }

// Levels returns the level summaries under opts. A results directory's records are
// summarized with opts (analysis.Summarize: the SLOs decide goodput, the maximum error rate
// a level's validity); summaries read from a file are returned as read, whatever opts.
func (in *Input) Levels(opts analysis.Options) []analysis.Level {
	if in.summarize != nil {
		return in.summarize(opts)
	}
	return in.levels
}

// Analyze analyzes the input under opts: analysis.Analyze(in.Levels(opts), in.Meta, opts),
// with the input's Warnings first.
func (in *Input) Analyze(opts analysis.Options) *analysis.Result {
	r := analysis.Analyze(in.Levels(opts), in.Meta, opts)
	if len(in.Warnings) > 0 {
		r.Warnings = append(append([]string(nil), in.Warnings...), r.Warnings...)
	}
	return &r
}

// Load reads the level summaries at path, which is one of
//
//   - a results directory (it has levels.json) with records.jsonl: Kind resultsDir; Levels
//     summarizes the records, Meta and Options come from levels.json and config.yaml;
//   - a results directory without its records (no records.jsonl, or one that holds no record
//     of the levels levels.json lists: empty, or replaced): Kind ResultsSummary, read from
//     its summary.csv, with Meta and Options as for resultsDir and Why saying what is
//     missing; one that measured no level is read as a resultsDir;
//   - any other directory: vLLM bench results (readVLLMBench), Kind vllmBench;
//   - a file: a level-summary CSV (ReadCSV), Kind CSV.
//
// inPlace says that the caller means to write the analysis into path itself (it was given no
// other output directory). A ResultsSummary input is then refused, before its summary.csv is
// read, with an error wrapping ErrInPlace that says what is missing: its analysis.json,
// report and summary.csv would be replaced by an analysis of nothing, or of its summary. Every other kind reads the same either way, and
// Input.InPlace says whether writing into path is allowed.
//
// Errors name the path: "PATH: no such file or directory" (matching fs.ErrNotExist), a shard
// of a sharded sweep that was not merged, a results directory with neither records.jsonl nor
// summary.csv, a directory that is neither a results directory nor vLLM bench results, and
// a malformed CSV, with its line and column.
func Load(path string, inPlace bool) (*Input, error) {
	return LoadContext(context.Background(), path, inPlace)
}

// LoadContext is Load, ended with ctx's error once ctx is done (an interrupt) while it reads a
// results directory's records (rundir.ReadContext).
func LoadContext(ctx context.Context, path string, inPlace bool) (*Input, error) {
	st, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, &notExistError{path}
	}
	if err != nil {
		return nil, err
	}
	switch {
	case st.IsDir() && isResultsDir(path):
		return loadResultsDir(ctx, path, inPlace)
	case st.IsDir():
		levels, meta, warnings, err := readVLLMBench(path)
		if err != nil {
			return nil, fmt.Errorf("%s is neither a results directory (no levels.json) nor vLLM bench results: %w", path, err)
		}
		return &Input{Kind: vllmBench, Path: path, Meta: meta, Options: analysis.DefaultOptions(), Warnings: warnings, levels: levels}, nil
	default:
		levels, err := readCSVFile(path)
		if err != nil {
			return nil, err
		}
		meta := analysis.Meta{Source: path, Name: trimExt(filepath.Base(path))}
		return &Input{Kind: CSV, Path: path, Meta: meta, Options: analysis.DefaultOptions(), levels: levels}, nil
	}
}

// readCSVFile reads the level-summary CSV file at path; errors name path.
func readCSVFile(path string) ([]analysis.Level, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadCSV(f, path)
}

// notExistError is "PATH: no such file or directory"; it matches fs.ErrNotExist.
type notExistError struct{ path string }

func (e *notExistError) Error() string { return e.path + ": no such file or directory" }
func (e *notExistError) Unwrap() error { return fs.ErrNotExist }

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func trimExt(name string) string { return name[:len(name)-len(filepath.Ext(name))] }
