package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kneecap/kneecap/config"
)

// DefaultPath is where a sweep with cfg writes its results: output.dir, else
// runs/<UTC time>-<name>, name being the run's name, else its model, else "sweep", with every
// character other than letters, digits, '-', '_' and '.' replaced by '-'. A shard's is
// runs/<start_at>-<name>-shard-I-of-N: the same prefix on every shard.
func DefaultPath(cfg config.Config, now time.Time) string {
	if cfg.Output.Dir != "" {
		return cfg.Output.Dir
	}
	suffix := ""
	if cfg.Shard.Sharded() {
		if at, err := cfg.Shard.Start(); err == nil {
			now = at
		}
		suffix = "-" + cfg.Shard.DirName()
	}
	name := cfg.Name
	if name == "" {
		name = cfg.Target.Model
		if name == "" {
			name = "sweep"
		}
	}
	name = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			return r
		}
		return '-'
	}, filepath.Base(name))
	return filepath.Join("runs", now.UTC().Format("20060102T150405Z")+"-"+name+suffix)
}

// CheckWritable creates dir if needed and checks that a file can be created in it and that it
// is empty: a directory holding a run is refused with advice at the end of the error (such as
// "choose another -o"), any other non-empty directory because kneecap would write its files
// among someone else's. created reports whether dir did not exist before, so that a caller
// that writes nothing can remove it again.
func CheckWritable(dir, advice string) (created bool, err error) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		created = true
	}
	for _, name := range []string{LevelsFile, RecordsFile} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return false, fmt.Errorf("%s already holds a run (%s): %s", dir, name, advice)
		}
	}
	if !created {
		if err := checkEmpty(dir, "kneecap run"); err != nil {
			return false, err
		}
	}
	if err := os.MkdirAll(dir, DirPerm); err != nil {
		return false, fmt.Errorf("%s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, ".kneecap-write-check*")
	if err != nil {
		if created {
			os.Remove(dir)
		}
		return false, fmt.Errorf("%s is not writable: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	return created, nil
}

// checkEmpty returns nil when dir is an empty directory, else an error saying that it is not
// a directory, or what it holds, for a command that writes what into it.
func checkEmpty(dir, what string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is a file, not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".kneecap-") {
			return fmt.Errorf("%s is not empty (it holds %s) and holds no %s: choose a new or empty directory",
				dir, e.Name(), what)
		}
	}
	return nil
}

// Outputs of `kneecap analyze` and `kneecap compare` for CheckOutput: the file that marks a
// directory as the command's earlier output, and what to call the output.
const (
	// AnalyzeOutput marks an earlier `kneecap analyze PATH -o DIR` (analysis.json).
	AnalyzeOutput = AnalysisFile
	// CompareOutput marks an earlier `kneecap compare RUN... -o DIR` (compare.md).
	CompareOutput = "compare.md"
	// CompareHTMLFile is compare's page, and CompareJSONFile the verdicts of its regression
	// gate (--max-regression).
	CompareHTMLFile = "compare.html"
	CompareJSONFile = "compare.json"
)

// CheckOutput checks the -o DIR of a command that writes marker and its companions (analyze,
// compare) before anything is computed: DIR may be missing (it is created later), empty, or
// an earlier output of the same command (it holds marker and no levels.json). A file, a
// results directory (its analysis would be replaced by another's; analyze one in place by
// leaving -o out) and any other non-empty directory are refused.
func CheckOutput(dir, marker string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("%s: %w", dir, err)
	case !fi.IsDir():
		return fmt.Errorf("%s is a file, not a directory", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, LevelsFile)); err == nil {
		return fmt.Errorf("%s is a results directory of another run (it has %s): writing into it would replace its analysis; choose a new or empty directory",
			dir, LevelsFile)
	}
	if _, err := os.Stat(filepath.Join(dir, marker)); err == nil {
		return nil
	}
	return checkEmpty(dir, "earlier kneecap output ("+marker+")")
}

// BaseName is the name of directory dir as the user sees it: the last element of its
// absolute path (a run's or a grid's label; "." becomes the working directory's name).
func BaseName(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}
	return filepath.Base(abs)
}

// UniqueLabels returns labels with each label that repeats replaced by where its run is: the
// last elements of its path (paths[i]: a directory, or a file in one), as many as tell the
// runs apart (two runs named demo in runs/a and runs/b read "a" and "b"; in x/runs/a and
// y/runs/a, "x/runs/a" and "y/runs/a"). When no such depth does (the same run twice), a
// repeated label gains "#2", "#3" ….
func UniqueLabels(labels, paths []string) []string {
	out := slices.Clone(labels)
	count := func(ls []string) map[string]int {
		n := map[string]int{}
		for _, l := range ls {
			n[l]++
		}
		return n
	}
	dirs := make([][]string, len(paths))
	for i, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			abs = p
		}
		if filepath.Ext(abs) == ".json" {
			abs = filepath.Dir(abs)
		}
		dirs[i] = strings.Split(filepath.ToSlash(abs), "/")
	}
	dup := count(out)
	for depth := 1; depth <= 8; depth++ {
		next := slices.Clone(out)
		for i, l := range labels {
			if dup[l] > 1 {
				d := dirs[i]
				next[i] = strings.Join(d[max(0, len(d)-depth):], "/")
			}
		}
		if len(count(next)) == len(next) {
			return next
		}
	}
	seen := map[string]int{}
	for i, l := range out {
		if seen[l]++; seen[l] > 1 {
			out[i] = l + "#" + strconv.Itoa(seen[l])
		}
	}
	return out
}
