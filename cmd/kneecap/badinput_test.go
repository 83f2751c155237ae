package main

// Bad input through the CLI (DESIGN §7): one line per problem naming FILE:LINE, exit 2, and
// nothing written. docs/reliability.md tabulates these tests.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// badInput is one bad input of TestBadInput: a `kneecap sweep` and what it must print.
type badInput struct {
	name string
	// config is the YAML file body ("" = no -c); $TMP is replaced.
	config string
	args   []string
	// want holds one entry per expected output line, in order: substrings of the line
	// joined by "&&"; "$CFG" is the config file's path.
	want []string
}

// TestBadInput runs kneecap with every kind of bad input a user writes and checks that each
// is exit 2 with one line per problem naming the file and line (where a file applies), and
// that no results or output directory was created.
func TestBadInput(t *testing.T) {
	tmp := t.TempDir()
	for _, tt := range badInputs(t, tmp) {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, tmp) })
	}
	badSummaryCSVs(t, tmp)
}

// writeIn writes body to dir/name and returns its path.
func writeIn(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// badInputs returns the bad inputs, with the files they name written into tmp.
func badInputs(t *testing.T, tmp string) []badInput {
	t.Helper()
	emptyDS := writeIn(t, tmp, "empty.jsonl", "")
	badDS := writeIn(t, tmp, "bad.jsonl", `{"prompt": "hello there", "max_tokens": 8}`+"\n"+`{"prompt": "hi", "max_tokens": }`+"\n")
	badTrace := writeIn(t, tmp, "bad-trace.jsonl", `{"timestamp": 0, "input_length": 5, "output_length": 3}`+"\n"+`{"timestamp": 1, "input_length": x}`+"\n")
	notFile := writeIn(t, tmp, "not-a-dir", "x")
	someoneElse := filepath.Join(tmp, "someone-else")
	if err := os.Mkdir(someoneElse, 0o700); err != nil {
		t.Fatal(err)
	}
	writeIn(t, someoneElse, "thesis.tex", "x")
	tests := []badInput{
		{"malformed YAML", "name: x\nsweep:\n  warmup: 5s\n   duration: 1s\n", nil, []string{"$CFG:4: mapping values are not allowed"}},
		{"unclosed list", "sweep:\n  levels: [1, 2\n", nil, []string{"$CFG:2: did not find expected ',' or ']': a […] list from here on is not closed"}},
		{"tab indentation", "sweep:\n\twarmup: 5s\n", nil, []string{"$CFG:2: found character that cannot start any token"}},
		{"not a mapping", "- 1\n- 2\n", nil, []string{"$CFG:1: the configuration must be a mapping"}},
		{"comments only", "# to do\n", nil, []string{"$CFG: the configuration is empty && leave out -c to run the demo"}},
		{"two documents", "name: a\n---\nname: b\n", nil, []string{"$CFG:3: a second YAML document"}},
		{"not UTF-8", "name: caf\xe9\n", nil, []string{"$CFG:1: byte 0xe9 at column 10 is not UTF-8"}},
		{"flow mapping", "target: {url: http://127.0.0.1:1/v1, model: m, request_timeout: abc}\n", nil,
			[]string{"$CFG:1: target.request_timeout: cannot unmarshal !!str `abc` into a duration"}},
		{"prompt length no context holds", "", []string{"--input-tokens", "2000000000"},
			[]string{"--input-tokens: workload.input_tokens.mean: is 2e+09: must be ≤ 10000000 tokens"}},
		{"output length no context holds", "workload:\n  output_tokens: {dist: uniform, min: 1, max: 1e12}\n", nil,
			[]string{"$CFG:2: workload.output_tokens.max: is 1e+12: must be ≤ 10000000 tokens"}},
		{"a warmup of years", "", []string{"--warmup", "87600h"}, []string{"--warmup: sweep.warmup: is 87600h0m0s: must be ≤ 24h0m0s"}},
		{"a window of years", "sweep:\n  duration: 87600h\n  max_duration: 87600h\n", nil, []string{"$CFG:2: sweep.duration: is 87600h0m0s: must be ≤ 24h0m0s"}},
		{"a thousand levels", "sweep:\n  levels: {start: 1, max: 1000, step: 1}\n", nil, []string{"$CFG:2: sweep.levels: more than 100 levels"}},
		{"an empty item in --levels", "", []string{"--levels", "1,,2"}, []string{`--levels: item 2 of "1,,2" is empty`}},
		{"a start decades ahead", "", []string{"--levels", "1", "--shard", "0/2", "--start-at", "2099-01-01T00:00:00Z", "--url", "http://127.0.0.1:1/v1", "--model", "m"},
			[]string{"--start-at: shard.start_at: 2099-01-01T00:00:00Z is && ahead: must be within 24h0m0s"}},
		{"burstiness 0", "sweep:\n  mode: rate\n  rates: [1]\n  arrival: gamma\n  burstiness: 0\n", nil, []string{"$CFG:5: sweep.burstiness: is 0: must be > 0"}},
		{"a fraction of a request", "sweep:\n  min_requests: 2.5\n", nil, []string{"$CFG:2: sweep.min_requests: is 2.5: must be a whole number"}},
		{"extra_body overriding the model", "target:\n  url: http://127.0.0.1:1/v1\n  model: m\n  extra_body:\n    model: other\n", nil,
			[]string{"$CFG:5: target.extra_body.model: kneecap sets model from target.model"}},
		{"extra_body not a mapping", "target:\n  extra_body: x\n", nil, []string{"$CFG:2: target.extra_body: && into a mapping of keys"}},
		{"unknown key", "sweep:\n  duraton: 5s\n", nil, []string{"$CFG:2: sweep.duraton: unknown key (sweep takes levels, warmup"}},
		{"unknown nested key", "target:\n  tls:\n    ca_flie: x\n", nil, []string{"$CFG:3: target.tls.ca_flie: unknown key (target.tls takes ca_file, insecure_skip_verify)"}},
		{"wrong type", "sweep:\n  min_requests: many\n", nil, []string{"$CFG:2: && many"}},
		{"wrong type for a rate", "sweep:\n  stop:\n    max_error_rate: high\n", nil, []string{"$CFG:3: && high"}},
		{"zero level", "sweep:\n  levels: [0, 1]\n", nil, []string{"$CFG:2: sweep.levels: level 1 is 0"}},
		{"negative level", "sweep:\n  levels: [-4]\n", nil, []string{"$CFG:2: sweep.levels: level 1 is -4"}},
		{"decreasing levels", "sweep:\n  levels: [1, 4, 2]\n", nil, []string{"$CFG:2: sweep.levels: levels must increase"}},
		{"bad progression", "sweep:\n  levels: {start: 8, max: 4, factor: 2}\n", nil, []string{"$CFG:2: sweep.levels: max 4 is below start 8"}},
		{"duration without unit", "sweep:\n  warmup: 5\n", nil, []string{"$CFG:2: sweep.warmup: duration needs a unit"}},
		{"negative duration", "sweep:\n  cooldown: -1s\n", nil, []string{"$CFG:2: sweep.cooldown: is -1s"}},
		{"missing model", "target:\n  url: http://127.0.0.1:1/v1\n", nil, []string{"$CFG:2: target.model: missing"}},
		{"bad url", "target:\n  url: 127.0.0.1:8000\n  model: m\n", nil, []string{"$CFG:2: target.url:"}},
		{"bad distribution", "workload:\n  input_tokens: {dist: zipf, mean: 10}\n", nil, []string{"$CFG:2: workload.input_tokens.dist:"}},
		{"uniform without bounds", "workload:\n  output_tokens: {dist: uniform}\n", nil, []string{"$CFG:2: workload.output_tokens: uniform needs"}},
		{"every decoding problem at once", "sweep:\n  warmup: 5\n  levles: [2, 1]\ntarget:\n  api: [chat]\n",
			nil, []string{"$CFG:2: sweep.warmup", "$CFG:3: sweep.levles: unknown key", "$CFG:5: && api"}},
		{"every validation problem at once", "sweep:\n  cooldown: -1s\n  levels: [2, 1]\ntarget:\n  api: grpc\n",
			nil, []string{"$CFG:2: sweep.cooldown", "$CFG:3: sweep.levels", "$CFG:5: target.api"}},
		{"decoding and validation problems at once", "sweep:\n  warmup: 5\n  cooldown: -1s\ntarget:\n  api: grpc\n  modle: m\n",
			nil, []string{"$CFG:2: sweep.warmup", "$CFG:3: sweep.cooldown", "$CFG:5: target.api", "$CFG:6: target.modle: unknown key"}},
		{"file and flag problems at once", "sweep:\n  warmup: 5\n", []string{"--levels", "1,x"},
			[]string{"$CFG:2: sweep.warmup", `--levels: "x" is not an integer`}},
		{"unreadable dataset", "workload:\n  dataset: $TMP/nope.jsonl\n", nil, []string{"$CFG:2: workload.dataset: cannot read"}},
		{"dataset is a directory", "workload:\n  dataset: $TMP\n", nil, []string{"$CFG:2: workload.dataset: && is a directory"}},
		{"empty dataset", "workload:\n  dataset: " + emptyDS + "\n", nil, []string{emptyDS + ": empty file"}},
		{"malformed dataset line", "workload:\n  dataset: " + badDS + "\n", nil, []string{badDS + ":2:"}},
		{"malformed trace line", "", []string{"--trace", badTrace}, []string{badTrace + ":2: not a Mooncake trace line"}},
		{"time scale without a trace", "sweep:\n  time_scales: [2]\n", nil, []string{"$CFG:2: sweep.time_scales: [2]: time scales replay a trace"}},
		{"missing config file", "", []string{"-c", filepath.Join(tmp, "nope.yaml")}, []string{"nope.yaml && no such file"}},
		{"bad level flag", "", []string{"--levels", "1,0"}, []string{"--levels: sweep.levels: level 2 is 0"}},
		{"output under a file", "", []string{"--levels", "1", "-o", filepath.Join(notFile, "run")}, []string{"results directory && not-a-dir"}},
		{"output in someone else's directory", "", []string{"--levels", "1", "-o", someoneElse},
			[]string{"results directory: " + someoneElse + " is not empty (it holds thesis.tex) and holds no kneecap run"}},
		{"base URL with a query", "target:\n  url: http://127.0.0.1:1/v1?api_key=sk-q\n  model: m\n", nil,
			[]string{`$CFG:2: target.url: "http://127.0.0.1:1/v1" followed by a query string (?…): a base URL takes none`}},
		{"base URL with a fragment", "target:\n  url: http://127.0.0.1:1/v1#x\n  model: m\n", nil,
			[]string{`$CFG:2: target.url: "http://127.0.0.1:1/v1" followed by a fragment`}},
		{"base URL with trailing whitespace", "target:\n  url: \"http://127.0.0.1:1/v1 \"\n  model: m\n", nil,
			[]string{`$CFG:2: target.url: "http://127.0.0.1:1/v1" has whitespace before or after it`}},
		{"--url with a query", "", []string{"--url", "http://127.0.0.1:1/v1?key=k", "--model", "m"},
			[]string{`--url: target.url: "http://127.0.0.1:1/v1" followed by a query string`}},
		{"--warmup without a unit", "", []string{"--warmup", "5"},
			[]string{`sweep: --warmup: duration needs a unit: write "5s", not 5`, "see kneecap sweep -h"}},
		{"--duration not a duration", "", []string{"--duration", "long"},
			[]string{`sweep: --duration: "long" is not a duration such as 5s`, "see kneecap sweep -h"}},
		{"--min-requests not an integer", "", []string{"--min-requests", "many"},
			[]string{`sweep: --min-requests: "many" is not an integer`, "see kneecap sweep -h"}},
		{"unknown flag", "", []string{"--levles", "1,2"}, []string{"sweep: --levles: no such flag", "see kneecap sweep -h"}},
		{"positional argument", "", []string{"http://127.0.0.1:1/v1"},
			[]string{`sweep: unexpected argument "http://127.0.0.1:1/v1" (sweep takes flags only)`, "see kneecap sweep -h"}},
	}
	if os.Geteuid() != 0 { // root writes anywhere
		ro := filepath.Join(tmp, "read-only")
		if err := os.Mkdir(ro, 0o555); err != nil {
			t.Fatal(err)
		}
		tests = append(tests, badInput{"read-only output parent", "", []string{"--levels", "1", "-o", filepath.Join(ro, "run")},
			[]string{"results directory && read-only"}})
	}
	return tests
}

// check runs the sweep and checks its exit code, its output lines and that it wrote nothing.
func (tt badInput) check(t *testing.T, tmp string) {
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"sweep"}
	cfg := ""
	if tt.config != "" {
		body := strings.NewReplacer("$TMP", tmp).Replace(tt.config)
		cfg = filepath.Join(t.TempDir(), "bad.yaml")
		if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "-c", cfg)
	}
	args = append(args, tt.args...)
	if !strings.Contains(strings.Join(args, " "), " -o ") {
		args = append(args, "-o", out)
	}
	e, stdout, stderr := testEnv()
	err := run(context.Background(), e, args)
	if code := exitCode(err); code != exitUsage {
		t.Fatalf("exit %d (%v), want %d\nstderr:\n%s", code, err, exitUsage, stderr)
	}
	lines := outputLines(stderr.String(), err)
	if len(lines) != len(tt.want) {
		t.Fatalf("%d output lines, want %d (one per problem):\n%s", len(lines), len(tt.want), strings.Join(lines, "\n"))
	}
	for i, w := range tt.want {
		for _, sub := range strings.Split(strings.ReplaceAll(w, "$CFG", cfg), " && ") {
			if !strings.Contains(lines[i], sub) {
				t.Errorf("line %d %q does not contain %q", i+1, lines[i], sub)
			}
		}
	}
	if stdout.Len() > 0 {
		t.Errorf("stdout should be empty on a usage error: %q", stdout)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("bad input left %s behind (%v)", out, err)
	}
}

// badSummaryCSVs: a level-summary CSV with problems is exit 2, one line naming FILE:LINE and
// the column, and no output directory.
func badSummaryCSVs(t *testing.T, tmp string) {
	csvMissing := writeIn(t, tmp, "missing.csv", "concurrency,qps\n1,2\n")
	csvCells := writeIn(t, tmp, "cells.csv", "concurrency,output_tps\n1,100\n2,150,7\n")
	csvNaN := writeIn(t, tmp, "nan.csv", "concurrency,output_tps\n1,100\n2,NaN\n")
	for _, c := range []struct{ path, want string }{
		{csvMissing, csvMissing + ":1"},
		{csvCells, csvCells + ":3"},
		{csvNaN, csvNaN + ":3"},
	} {
		out := filepath.Join(t.TempDir(), "out")
		e, _, stderr := testEnv()
		err := run(context.Background(), e, []string{"analyze", c.path, "-o", out})
		if code := exitCode(err); code != exitUsage {
			t.Errorf("analyze %s: exit %d (%v), want %d", c.path, code, err, exitUsage)
			continue
		}
		if lines := outputLines(stderr.String(), err); len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("analyze %s: output %q, want one line naming %s", c.path, lines, c.want)
		}
		if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("analyze %s: a bad CSV left %s behind", c.path, out)
		}
	}
}
