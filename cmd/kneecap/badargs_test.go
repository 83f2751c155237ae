package main

// Bad command lines and input files of analyze, compare, merge and the other commands (DESIGN
// §7, §9.2): each is exit 2 with the lines asserted here (a command-line error: one line,
// then "see kneecap CMD -h"), nothing on stdout, and no file written. docs/reliability.md
// tabulates them.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/rundir"
)

// badArgs is one bad command line: what it prints, line by line (substrings joined by "&&").
type badArgs struct {
	name string
	args []string
	want []string
}

// copyRun copies the named files of the committed sample run into a new directory.
func copyRun(t *testing.T, files ...string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(sampleRun, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBadCommandLine runs every bad command line and input file of the commands other than
// sweep (TestBadInput has sweep's), and checks exit 2, the lines printed, an empty stdout,
// and that an existing directory it names was left as it was.
func TestBadCommandLine(t *testing.T) {
	tmp := t.TempDir()
	good := writeIn(t, tmp, "good.csv", "concurrency,output_tps\n1,100\n2,180\n4,300\n")
	dup := writeIn(t, tmp, "dup.csv", "concurrency,output_tps\n1,100\n2,180\n# again\n2,175\n")
	file := writeIn(t, tmp, "plain.txt", "x")
	other := filepath.Join(tmp, "other")
	if err := os.Mkdir(other, 0o700); err != nil {
		t.Fatal(err)
	}
	writeIn(t, other, "notes.txt", "mine")
	run1 := filepath.Join(tmp, "run1")
	writeRun(t, run1, compareRun("a", 32, 3000, 22))
	emptyRecs := copyRun(t, "config.yaml", "levels.json", "analysis.json", "summary.csv")
	writeIn(t, emptyRecs, rundir.RecordsFile, "")
	noRecs := copyRun(t, "config.yaml", "levels.json", "analysis.json", "summary.csv")
	levelsJSON := filepath.Join(noRecs, rundir.LevelsFile)
	for _, tc := range []badArgs{
		{"analyze without PATH", []string{"analyze"}, []string{"analyze: want one PATH, got 0", "see kneecap analyze -h"}},
		{"analyze -o a file", []string{"analyze", good, "-o", file}, []string{"analyze: -o: " + file + " is a file, not a directory"}},
		{"analyze -o someone else's directory", []string{"analyze", good, "-o", other},
			[]string{"analyze: -o: " + other + " is not empty (it holds notes.txt) and holds no earlier kneecap output (analysis.json)"}},
		{"analyze -o another run", []string{"analyze", good, "-o", emptyRecs}, []string{"analyze: -o: " + emptyRecs + " is a results directory of another run"}},
		{"analyze a run with empty records.jsonl", []string{"analyze", emptyRecs},
			[]string{"analyze: " + emptyRecs + ": levels.json lists 10 levels, but records.jsonl is empty: -o DIR is required"}},
		{"analyze a run without records.jsonl", []string{"analyze", noRecs}, []string{"analyze: " + noRecs + " has no records.jsonl: -o DIR is required"}},
		{"CSV with a level twice", []string{"analyze", dup, "-o", filepath.Join(tmp, "dup-out")},
			[]string{"analyze: " + dup + `:5: column "concurrency": 2 again (first on line 3): one row per level`}},
		{"SLO flag without a unit", []string{"analyze", good, "--slo-ttft-p95", "2"},
			[]string{`analyze: --slo-ttft-p95: duration needs a unit: write "2s", not 2`, "see kneecap analyze -h"}},
		{"SLO of a percentile there is none of", []string{"analyze", good, "--slo", "ttft:p90:2s"},
			[]string{`analyze: --slo: "ttft:p90:2s": percentile "p90": want p50, p95 or p99`, "see kneecap analyze -h"}},
		{"SLO without a unit", []string{"analyze", good, "--slo", "itl:p99:30"},
			[]string{`analyze: --slo: "itl:p99:30": duration needs a unit: write "30s", not 30`, "see kneecap analyze -h"}},
		{"sweep SLO of no metric", []string{"sweep", "--slo", "gpu:p99:2s"},
			[]string{`sweep: --slo: "gpu:p99:2s": metric "gpu": want ttft, tpot, itl or e2e`, "see kneecap sweep -h"}},
		{"header without a colon", []string{"sweep", "--header", "X-Api-Key=sk-SECRET"},
			[]string{"sweep: --header: want NAME:VALUE, such as X-Tenant:acme (the value given has no colon)", "see kneecap sweep -h"}},
		{"header without a name", []string{"sweep", "--header", ": sk-SECRET"},
			[]string{"sweep: --header: want NAME:VALUE: the header name before the colon is empty", "see kneecap sweep -h"}},
		{"header of an invalid name", []string{"sweep", "--header", "X Api(Key):sk-SECRET"},
			[]string{`sweep: --header: header name "X Api(Key)": not a valid HTTP header name`, "see kneecap sweep -h"}},
		{"header Host", []string{"sweep", "--header", "Host: evil.example"},
			[]string{"sweep: --header: header Host: cannot be set (net/http sets it from the URL)", "see kneecap sweep -h"}},
		{"header Content-Length", []string{"sweep", "--header", "content-length:3"},
			[]string{"sweep: --header: header Content-Length: cannot be set (net/http sets it from the body)", "see kneecap sweep -h"}},
		{"header without a value", []string{"sweep", "--header", "X-Api-Key:"},
			[]string{"sweep: --header: header X-Api-Key: empty value", "see kneecap sweep -h"}},
		{"header with a newline", []string{"sweep", "--header", "X-Api-Key:sk-SECRET\r\nX-Evil: 1"},
			[]string{"sweep: --header: header X-Api-Key: the value holds a control character", "see kneecap sweep -h"}},
		{"header twice", []string{"sweep", "--header", "X-Tenant:a", "--header", "x-tenant:b"},
			[]string{"sweep: --header: header X-Tenant given twice", "see kneecap sweep -h"}},
		{"knee gain out of range", []string{"analyze", good, "-o", filepath.Join(tmp, "kg"), "--knee-gain", "2"},
			[]string{"analyze: --knee-gain 2: want a fraction in (0, 1)", "see kneecap analyze -h"}},
		{"compare a CSV", []string{"compare", good, run1, "-o", filepath.Join(tmp, "c1")},
			[]string{"compare: " + good + " is a level-summary CSV, not a results directory or an analysis.json: run kneecap analyze " + good + " -o DIR, then compare DIR"}},
		{"compare a directory that is no run", []string{"compare", run1, tmp + "/other", "-o", filepath.Join(tmp, "c2")},
			[]string{"compare: " + tmp + "/other is not a results directory (it has no levels.json or analysis.json)"}},
		{"compare a JSON file that is no analysis", []string{"compare", run1, levelsJSON, "-o", filepath.Join(tmp, "c3")},
			[]string{"compare: " + levelsJSON + ` is not an analysis.json of kneecap (schema "kneecap.levels/v1", want "kneecap.analysis/v1")`}},
		{"compare -o someone else's directory", []string{"compare", run1, run1, "-o", other},
			[]string{"compare: -o: " + other + " is not empty (it holds notes.txt) and holds no earlier kneecap output (compare.md)"}},
		{"compare one run", []string{"compare", run1, "-o", filepath.Join(tmp, "c4")}, []string{"compare: need at least 2 runs, got 1", "see kneecap compare -h"}},
		{"merge without -o", []string{"merge", run1}, []string{"merge: -o DIR is required", "see kneecap merge -h"}},
		{"merge -o someone else's directory", []string{"merge", emptyRecs, "-o", other},
			[]string{"merge: " + other + " is not empty (it holds notes.txt) and holds no kneecap run: choose a new or empty directory"}},
		{"merge a run without records", []string{"merge", emptyRecs, "-o", filepath.Join(tmp, "m1")},
			[]string{"merge: " + emptyRecs + ": levels.json lists 10 levels, but records.jsonl is empty: its part of the load is gone"}},
		{"sim duration without a unit", []string{"sim", "--ttft", "5"}, []string{`sim: --ttft: duration needs a unit: write "5s", not 5`, "see kneecap sim -h"}},
		{"unknown command", []string{"swep"}, []string{`unknown command "swep"`, "see kneecap -h"}},
		{"version with an argument", []string{"version", "now"}, []string{`version: unexpected argument "now"`, "see kneecap version -h"}},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.check(t, other, emptyRecs, tmp) })
	}
}

// check runs the command line and checks its exit code and output, and that the directories
// it may have written into are as they were.
func (tc badArgs) check(t *testing.T, other, run, tmp string) {
	before := listFiles(t, other, run)
	r := runCmd(nil, tc.args...)
	if code := exitCode(r.err); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d\n%s", code, r.err, exitUsage, r.stderr)
	}
	lines := outputLines(r.stderr, r.err)
	if strings.Contains(strings.Join(lines, "\n"), "SECRET") {
		t.Errorf("the output repeats a value given: %q", lines)
	}
	if len(lines) != len(tc.want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(tc.want), strings.Join(lines, "\n"))
	}
	for i, w := range tc.want {
		for _, sub := range strings.Split(w, " && ") {
			if !strings.HasPrefix(lines[i], "kneecap: ") || !strings.Contains(lines[i], sub) {
				t.Errorf("line %d %q does not contain %q", i+1, lines[i], sub)
			}
		}
	}
	if r.stdout != "" {
		t.Errorf("stdout should be empty on a usage error: %q", r.stdout)
	}
	if after := listFiles(t, other, run); after != before {
		t.Errorf("files changed:\nbefore %s\nafter  %s", before, after)
	}
	for _, d := range []string{"dup-out", "kg", "c1", "c2", "c3", "c4", "m1"} {
		if _, err := os.Stat(filepath.Join(tmp, d)); err == nil {
			t.Errorf("a refused command created %s", d)
		}
	}
}

// listFiles names every file of dirs with its size and modification time.
func listFiles(t *testing.T, dirs ...string) string {
	t.Helper()
	var b strings.Builder
	for _, d := range dirs {
		entries, err := os.ReadDir(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			fi, err := e.Info()
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s:%s:%d ", e.Name(), fi.ModTime(), fi.Size())
		}
	}
	return b.String()
}

// TestAnalyzeCountsDroppedLines: a records.jsonl whose last line was cut short and that holds
// a record of another run is analyzed, and the first warning counts both lines.
func TestAnalyzeCountsDroppedLines(t *testing.T) {
	t.Parallel()
	src, _ := sharedFastSweep(t)
	dir := t.TempDir()
	for _, f := range []string{rundir.ConfigFile, rundir.LevelsFile, rundir.RecordsFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if f == rundir.RecordsFile {
			var rec map[string]any
			first, _, _ := strings.Cut(string(b), "\n")
			if err := json.Unmarshal([]byte(first), &rec); err != nil {
				t.Fatal(err)
			}
			rec["sent_unix_ns"] = 1_000_000_000 // 1970: another run's
			foreign, _ := json.Marshal(rec)
			b = append(append([]byte(first+"\n"+string(foreign)+"\n"), b[len(first)+1:]...), `{"level":2,"concurrency":4,"wo`...)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	r := runCmd(nil, "analyze", dir, "--bootstrap", "0")
	if r.err != nil {
		t.Fatalf("analyze: %v\n%s", r.err, r.stderr)
	}
	want := "1. " + filepath.Join(dir, rundir.RecordsFile) + ": 2 lines left out: the last one (line "
	if !strings.Contains(r.stdout, want) || !strings.Contains(r.stdout, "1 of another run (first at line 2") {
		t.Errorf("the console does not count the dropped lines (%q):\n%s", want, r.stdout)
	}
}
