package summary

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/rundir"
)

// TestRecheckEditedUsage: a records.jsonl whose output_tokens were edited to 10¹⁵ is held to
// the live sweep's usage rules on reading: not believed, warned once with the count and the
// first record, and the throughput taken from the chunks — the unedited run's (before: "Maximum
// output throughput is 2.09e+15 tokens/s").
func TestRecheckEditedUsage(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "run")
	writeRun(t, dir, runConfig(), []int{1, 2, 4})
	in, err := Load(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	truth := in.Analyze(in.Options)

	path := filepath.Join(dir, rundir.RecordsFile)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.Count(b, []byte("\n"))
	edited := bytes.ReplaceAll(b, []byte(`"output_tokens":16,`), []byte(`"output_tokens":1000000000000000,`))
	if bytes.Equal(edited, b) {
		t.Fatal("no output_tokens edited")
	}
	if err := os.WriteFile(path, edited, 0o600); err != nil {
		t.Fatal(err)
	}
	in, err = Load(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	res := in.Analyze(in.Options)
	if got, want := float64(res.Throughput.MaxTPS), float64(truth.Throughput.MaxTPS); got != want {
		t.Errorf("max TPS %g, want the chunks' %g", got, want)
	}
	var rechecked []string
	for _, w := range res.Warnings {
		if strings.HasPrefix(w, "usage:") { // every usage warning: the recheck's alone
			rechecked = append(rechecked, w)
		}
	}
	want := "usage: " + strconv.Itoa(lines) + " record(s) of records.jsonl"
	if len(rechecked) != 1 || !strings.HasPrefix(rechecked[0], want) ||
		!strings.Contains(rechecked[0], "first: level 0, worker 0, request 0: completion_tokens 1000000000000000 not believed: more than 10000000 (absurd); output_tokens counts the 16 content chunks") {
		t.Errorf("warnings %q, want one starting %q naming the first record", res.Warnings, want)
	}
}
