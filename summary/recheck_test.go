package summary

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
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

// TestRecheckUsesSweepBound: `kneecap analyze` holds records to the tokens-per-chunk bound the
// sweep held them to: the one levels.json records with each level, else, in a levels.json from
// before the key, record.ChunkBound's (the server's stream_interval, but not in a merged sharded
// run, whose shards other than 0 never read it). Before, a merged run's records, checked live
// against 64 tokens a chunk, were disbelieved offline against 4 × SGLang's stream_interval 1.
func TestRecheckUsesSweepBound(t *testing.T) {
	t.Parallel()
	const perChunk = 8 // each of the 16 chunks carries 8 tokens: above 4 × 1, within 64
	for _, tc := range []struct {
		name   string
		bound  int // levels[].tokens_per_chunk_bound (0: absent)
		shards int // merged_shards
		warned bool
	}{
		{"bound recorded", record.DefaultTokensPerChunk, 0, false},
		{"merged, no bound", 0, 2, false},
		{"one process, no bound", 0, 0, true},
	} {
		dir := filepath.Join(t.TempDir(), "run")
		writeRun(t, dir, runConfig(), []int{1, 2})
		in, err := Load(dir, true)
		if err != nil {
			t.Fatal(err)
		}
		truth := in.Analyze(in.Options)
		editJSON(t, filepath.Join(dir, rundir.LevelsFile), func(doc map[string]any) {
			doc["server_info"] = map[string]any{"engine": "SGLang", "settings": map[string]any{"stream_interval": "1"}, "from": "/server_info"}
			if tc.shards > 0 {
				doc["merged_shards"] = tc.shards
			}
			for _, lv := range doc["levels"].([]any) {
				lv := lv.(map[string]any)
				delete(lv, "tokens_per_chunk_bound")
				if tc.bound > 0 {
					lv["tokens_per_chunk_bound"] = tc.bound
				}
			}
		})
		path := filepath.Join(dir, rundir.RecordsFile)
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.ReplaceAll(b, []byte(`"output_tokens":16,`), []byte(`"output_tokens":`+strconv.Itoa(16*perChunk)+`,`))
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		if in, err = Load(dir, true); err != nil {
			t.Fatal(err)
		}
		res := in.Analyze(in.Options)
		warned := false
		for _, w := range res.Warnings {
			warned = warned || strings.HasPrefix(w, "usage:")
		}
		want := float64(truth.Throughput.MaxTPS) * perChunk
		if warned {
			want = float64(truth.Throughput.MaxTPS)
		}
		if warned != tc.warned || float64(res.Throughput.MaxTPS) != want {
			t.Errorf("%s: usage warned %v, max TPS %g; want warned %v, %g (warnings %q)", tc.name, warned, float64(res.Throughput.MaxTPS), tc.warned, want, res.Warnings)
		}
	}
}

// editJSON rewrites the JSON object in path as edit changes it.
func editJSON(t *testing.T, path string, edit func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
