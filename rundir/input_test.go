package rundir

// Input a results directory must not believe (DESIGN §7): lines of records.jsonl left out are
// counted, a run whose records are gone says so, an output directory that holds someone
// else's files is refused, and secrets never reach a file.

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/redact"
)

// TestReadCountsDropped: a killed run's partial last line and half-written level, and a
// record of another run pasted among the listed ones, are left out and counted.
func TestReadCountsDropped(t *testing.T) {
	dir, keep := writeKilledRun(t)
	p := filepath.Join(dir, RecordsFile)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	_, other := fakeLevel(0, 1, 1) // level 0 at concurrency 1, sent an hour before this run's
	other[0].Sent -= int64(time.Hour)
	ob, _ := json.Marshal(&other[0])
	lines = append(lines[:3], append([]string{string(ob) + "\n"}, lines[3:]...)...)
	if err := os.WriteFile(p, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Records()) != len(keep) {
		t.Errorf("%d records, want %d", len(r.Records()), len(keep))
	}
	want := Dropped{Truncated: 13, Unlisted: 3, Foreign: 1, FirstForeign: 4}
	if r.Dropped != want {
		t.Errorf("Dropped = %+v, want %+v", r.Dropped, want)
	}
	msg := r.Dropped.String()
	for _, w := range []string{"5 lines left out", "the last one (line 13) cut short", "3 of a level levels.json does not list", "1 of another run (first at line 4"} {
		if !strings.Contains(msg, w) {
			t.Errorf("Dropped.String() = %q, lacks %q", msg, w)
		}
	}
	if r.MissingRecords() != "" {
		t.Errorf("MissingRecords = %q for a run with its records", r.MissingRecords())
	}
}

// TestMissingRecords: levels.json lists levels but records.jsonl is empty: Read returns the
// levels without records, MissingRecords says so, and Resume refuses to continue.
func TestMissingRecords(t *testing.T) {
	dir, _ := writeKilledRun(t)
	if err := os.Truncate(filepath.Join(dir, RecordsFile), 0); err != nil {
		t.Fatal(err)
	}
	r, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := "levels.json lists 2 levels, but records.jsonl is empty"
	if got := r.MissingRecords(); got != want {
		t.Errorf("MissingRecords = %q, want %q", got, want)
	}
	if _, _, err := Resume(dir); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Resume = %v, want it to refuse: %s", err, want)
	}
}

// TestCheckWritableNonEmpty: a sweep's or merge's -o must be new or empty: a directory of
// someone else's files is refused, naming one of them.
func TestCheckWritableNonEmpty(t *testing.T) {
	dir := t.TempDir()
	if created, err := CheckWritable(dir, "choose another -o"); err != nil || created {
		t.Errorf("empty directory: created %v, %v", created, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := CheckWritable(dir, "choose another -o")
	if err == nil || !strings.Contains(err.Error(), dir+" is not empty (it holds notes.txt) and holds no kneecap run") {
		t.Errorf("non-empty directory: %v", err)
	}
}

// TestCheckOutput: analyze's and compare's -o may be new, empty or their own earlier
// output; a file, another run's results directory and someone else's files are refused.
func TestCheckOutput(t *testing.T) {
	root := t.TempDir()
	mk := func(name string, files ...string) string {
		d := filepath.Join(root, name)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(d, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	file := filepath.Join(mk("f", "x.csv"), "x.csv")
	for _, tc := range []struct {
		dir, marker, want string // want "" = accepted
	}{
		{filepath.Join(root, "new"), AnalyzeOutput, ""},
		{mk("empty"), AnalyzeOutput, ""},
		{mk("again", "analysis.json", "report.md"), AnalyzeOutput, ""},
		{mk("cmp", "compare.md"), CompareOutput, ""},
		{file, AnalyzeOutput, "x.csv is a file, not a directory"},
		{mk("run", "levels.json", "analysis.json"), AnalyzeOutput, "is a results directory of another run"},
		{mk("home", "thesis.tex"), AnalyzeOutput, "is not empty (it holds thesis.tex) and holds no earlier kneecap output (analysis.json)"},
		{mk("ana", "analysis.json"), CompareOutput, "holds no earlier kneecap output (compare.md)"},
	} {
		err := CheckOutput(tc.dir, tc.marker)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("CheckOutput(%s, %s) = %v, want %q", tc.dir, tc.marker, err, tc.want)
		}
	}
}

// TestSetSecrets: once set, the secrets in every form are gone from records.jsonl's error
// messages, levels.json (notes, stop reason) and server_info.json; the records passed in
// keep their text.
func TestSetSecrets(t *testing.T) {
	const key = "sk-SINK-secret-42"
	dir, cfg := newTestDir(t)
	d, err := Create(dir, cfg, "", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	d.SetSecrets(redact.NewSecrets(key))
	if err := d.SetProvenance("test", nil, []byte(`{"/version": {"args": "--api-key `+key+`"}}`)); err != nil {
		t.Fatal(err)
	}
	run, recs := fakeLevel(0, 1, 3)
	b64 := "QmVhcmVyIHNrLVNJTkstc2VjcmV0LTQy" // base64("Bearer sk-SINK-secret-42")
	recs[2].Error = "openai: stream: unauthorized " + b64
	run.Notes = []string{"first error: " + key}
	if err := d.LevelDone(record.Level{Run: run, Records: recs}); err != nil {
		t.Fatal(err)
	}
	if err := d.Finish("error rate: " + key); err != nil {
		t.Fatal(err)
	}
	d.Close()
	if !strings.Contains(recs[2].Error, b64) {
		t.Error("LevelDone changed the caller's record")
	}
	for _, f := range []string{RecordsFile, LevelsFile, ServerInfoFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), key) || strings.Contains(string(b), b64) || !strings.Contains(string(b), redact.Marker) {
			t.Errorf("%s holds the key, or no marker where it was:\n%s", f, b)
		}
	}
	if _, err := Read(dir); err != nil {
		t.Errorf("the redacted directory does not read back: %v", err)
	}
}
