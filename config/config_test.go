package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// writeConfig writes text to a temporary config file and returns its path.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kneecap.yaml")
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultConfigValid(t *testing.T) {
	c := Default()
	if err := c.Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
	levels, err := c.Sweep.Levels.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 2, 4, 8, 16, 32, 64, 128, 256}; !reflect.DeepEqual(levels, want) {
		t.Errorf("default levels = %v, want %v", levels, want)
	}
	if c.Sweep.RecordChunks == nil || !*c.Sweep.RecordChunks {
		t.Error("record_chunks should default to true")
	}
}

func TestLoadConfigGood(t *testing.T) {
	p := writeConfig(t, `
name: llama8b-h100
target:
  url: http://127.0.0.1:8000/v1
  model: meta-llama/Llama-3.1-8B-Instruct
  api: completions
  request_timeout: 2m
  ttft_timeout: 90s
  stall_timeout: 0s
  extra_body: {ignore_eos: true, top_k: 1}
workload:
  output_tokens: {mean: 256}
sweep:
  levels: [1, 2, 4, 8]
  warmup: 1500ms
  duration: 10s
  max_duration: 1m
  record_chunks: false
  stop: {plateau: false}
slo: {ttft_p95: 1s}
`)
	c, err := Load(p)
	if err != nil {
		t.Fatalf("LoadConfig: %v", err)
	}
	if c.Name != "llama8b-h100" || c.Target.API != record.APICompletions || c.Target.RequestTimeout != 2*time.Minute {
		t.Errorf("target not decoded: %+v", c.Target)
	}
	if c.Target.TTFTTimeout != 90*time.Second || c.Target.StallTimeout != 0 {
		t.Errorf("stream timeouts not decoded: ttft %v stall %v", c.Target.TTFTTimeout, c.Target.StallTimeout)
	}
	if d := Default().Target; d.TTFTTimeout != time.Minute || d.StallTimeout != 30*time.Second {
		t.Errorf("default stream timeouts ttft %v stall %v, want 1m and 30s", d.TTFTTimeout, d.StallTimeout)
	}
	if c.Target.ExtraBody["ignore_eos"] != true || c.Target.ExtraBody["top_k"] != 1 {
		t.Errorf("extra_body = %v", c.Target.ExtraBody)
	}
	// Fields not in the file keep their defaults; a partial mapping merges over them.
	if c.Workload.OutputTokens.Dist != "fixed" || c.Workload.OutputTokens.Mean != 256 || c.Workload.InputTokens.Mean != 512 {
		t.Errorf("workload = %+v", c.Workload)
	}
	if !reflect.DeepEqual(c.Sweep.Levels.List, []int{1, 2, 4, 8}) {
		t.Errorf("levels = %+v", c.Sweep.Levels)
	}
	if c.Sweep.Warmup != 1500*time.Millisecond || c.Sweep.Duration != 10*time.Second || c.Sweep.MinRequests != 100 {
		t.Errorf("sweep = %+v", c.Sweep)
	}
	if c.Sweep.RecordChunks == nil || *c.Sweep.RecordChunks {
		t.Error("record_chunks: false not decoded")
	}
	if c.Sweep.Stop.Plateau || !c.Sweep.Stop.Overload || c.Sweep.Stop.MaxErrorRate != 0.05 {
		t.Errorf("stop = %+v", c.Sweep.Stop)
	}
	if c.SLO.TTFTP95 != time.Second || c.SLO.TPOTP95 != 50*time.Millisecond {
		t.Errorf("slo = %+v", c.SLO)
	}
}

func TestLoadConfigProgressions(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []int
	}{
		{"sweep: {levels: {start: 8, max: 64, step: 8}}", []int{8, 16, 24, 32, 40, 48, 56, 64}},
		{"sweep: {levels: {start: 1, max: 100, factor: 2}}", []int{1, 2, 4, 8, 16, 32, 64, 100}},
		// A mapping replaces the default progression: no factor is left over next to step.
		{"sweep:\n  levels:\n    start: 4\n    max: 12\n    step: 4\n", []int{4, 8, 12}},
	} {
		c, err := Load(writeConfig(t, tc.yaml))
		if err != nil {
			t.Errorf("%q: %v", tc.yaml, err)
			continue
		}
		got, err := c.Sweep.Levels.Expand()
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q: Expand = %v, %v; want %v", tc.yaml, got, err, tc.want)
		}
	}
}

// TestLoadConfigShapes: a file of comments only, a second YAML document, bytes that are not
// UTF-8 and a value of a flow mapping each name the file, the line and the problem (issue 26);
// the flow mapping's wrong value is blamed on its key on every read, not on a key beside it.
func TestLoadConfigShapes(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"comments only", "# nothing here\n\n", ": the configuration is empty (no keys, only comments or blank lines)"},
		{"null document", "~\n", ": the configuration is empty"},
		{"two documents", "name: a\n---\nname: b\n", ":3: a second YAML document"},
		{"not UTF-8", "name: a\nsweep:\n  seed: 1\xff\n", ":3: byte 0xff at column 10 is not UTF-8"},
		{"flow mapping", "target: {url: http://h/v1, model: m, request_timeout: abc, ttft_timeout: 1s}\n",
			":1: target.request_timeout: cannot unmarshal !!str `abc` into a duration"},
		{"extra_body scalar", "target:\n  extra_body: \"x\"\n", ":2: target.extra_body: cannot unmarshal !!str `x` into a mapping of keys"},
	} {
		p := writeConfig(t, tc.yaml)
		for range 8 { // map order must not choose the key
			_, err := Load(p)
			if err == nil || !strings.Contains(err.Error(), p+tc.want) {
				t.Errorf("%s: %v; want %q", tc.name, err, p+tc.want)
				break
			}
		}
	}
}

func TestLoadConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		// want are substrings of the error; the first names FILE:LINE.
		want []string
	}{
		{"unknown key", "target:\n  url: http://x/v1\n  modle: m\n",
			[]string{":3: target.modle: unknown key (target takes url, model"}},
		{"unknown top-level key", "name: a\nsweeep: {}\n",
			[]string{":2: sweeep: unknown key (the top level takes name"}},
		{"wrong type", "sweep:\n  min_requests: many\n",
			[]string{":2: sweep.min_requests: cannot unmarshal !!str `many` into int"}},
		{"duration without unit", "sweep:\n  warmup: 2s\n  duration: 30\n",
			[]string{`:3: sweep.duration: duration needs a unit: write "30s"`}},
		{"bad duration string", "target:\n  request_timeout: soon\n",
			[]string{":2: target.request_timeout: cannot unmarshal !!str `soon` into a duration"}},
		{"negative ttft timeout", "target:\n  ttft_timeout: -1s\n",
			[]string{":2: target.ttft_timeout: is -1s: must be ≥ 0"}},
		{"negative answer budget", "target:\n  answer_budget: -1s\n",
			[]string{":2: target.answer_budget: is -1s: must be ≥ 0"}},
		{"answer budget of a year", "target:\n  answer_budget: 8760h\n",
			[]string{":2: target.answer_budget: is 8760h0m0s"}},
		{"stall timeout without unit", "target:\n  stall_timeout: 30\n",
			[]string{`:2: target.stall_timeout: duration needs a unit: write "30s"`}},
		{"decreasing levels", "sweep:\n  levels: [1, 4, 2]\n",
			[]string{":2: sweep.levels: levels must increase: 2 follows 4"}},
		{"zero level", "sweep:\n  levels: [0, 1]\n",
			[]string{":2: sweep.levels: level 1 is 0"}},
		{"non-integer level", "sweep:\n  levels: [1, two]\n",
			[]string{`:2: sweep.levels: "two" is not an integer`}},
		{"unknown progression key", "sweep:\n  levels:\n    start: 1\n    maximum: 9\n",
			[]string{":4: sweep.levels: field maximum not found"}},
		{"factor without step", "sweep:\n  levels: {start: 1, max: 8, factor: 1}\n",
			[]string{":2: sweep.levels: factor is 1: must be > 1"}},
		{"missing model", "target:\n  url: http://127.0.0.1:8000/v1\n",
			[]string{":2: target.model: missing"}},
		{"bad api", "target:\n  api: response\n",
			[]string{`:2: target.api: "response": must be one of chat, completions, responses, messages or embeddings`}},
		{"ci target", "sweep:\n  ci_target: 1.5\n",
			[]string{":2: sweep.ci_target: is 1.5: must be in (0, 1)"}},
		{"max below duration", "sweep:\n  duration: 1m\n  max_duration: 30s\n",
			[]string{":3: sweep.max_duration: 30s is below duration 1m0s"}},
		{"error rate", "sweep:\n  stop:\n    max_error_rate: 2\n",
			[]string{":3: sweep.stop.max_error_rate: is 2: must be in [0, 1]"}},
		{"shared prefix too long", "workload:\n  input_tokens: {dist: fixed, mean: 512}\n  shared_prefix: {count: 1, tokens: 512}\n",
			[]string{":3: workload.shared_prefix.tokens: is 512: must be below the shortest prompt workload.input_tokens can draw (512)"}},
		{"shared prefix with prefix_cache", "workload:\n  prefix_cache: true\n  shared_prefix:\n    count: 2\n    tokens: 64\n",
			[]string{":3: workload.shared_prefix: and workload.prefix_cache are both set"}},
		{"dataset missing", "workload:\n  dataset: /nonexistent/sharegpt.json\n",
			[]string{":2: workload.dataset: cannot read"}},
		{"bad prompt sizing", "workload:\n  prompt_sizing: bytes\n",
			[]string{`:2: workload.prompt_sizing: "bytes": must be auto, tokenize, usage, tokenizer or words`}},
		{"tokenizer sizing without a file", "workload:\n  prompt_sizing: tokenizer\n",
			[]string{":2: workload.prompt_sizing: tokenizer needs workload.tokenizer"}},
		{"tokenizer file missing", "workload:\n  tokenizer: /nonexistent/tokenizer.json\n",
			[]string{":2: workload.tokenizer: cannot read"}},
		{"tokenizer file unused", "workload:\n  prompt_sizing: usage\n  tokenizer: /nonexistent/tokenizer.json\n",
			[]string{":3: workload.tokenizer: is set, but workload.prompt_sizing is usage"}},
		{"bad dist", "workload:\n  input_tokens: {dist: zipf, mean: 5}\n",
			[]string{`:2: workload.input_tokens.dist: "zipf"`}},
		{"cancel fraction", "workload:\n  cancel:\n    fraction: 0\n    after_tokens: {dist: fixed, mean: 8}\n",
			[]string{":3: workload.cancel.fraction: is 0: must be in (0, 1]"}},
		{"cancel both rules", "workload:\n  cancel:\n    fraction: 0.2\n    after: {dist: fixed, mean: 2s}\n    after_tokens: {dist: fixed, mean: 8}\n",
			[]string{":2: workload.cancel: give exactly one of after"}},
		{"cancel after without unit", "workload:\n  cancel:\n    fraction: 0.2\n    after: {dist: fixed, mean: 2}\n",
			[]string{`:4: workload.cancel.after.mean: duration needs a unit: write "2s"`}},
		{"cancel after zero", "workload:\n  cancel:\n    fraction: 0.2\n    after:\n      dist: fixed\n      mean: 0s\n",
			[]string{":6: workload.cancel.after.mean: is 0: must be ≥ 1 µs"}},
		{"simulator compute", "simulator:\n  profile: fixed\n  compute: fast\n",
			[]string{`:3: simulator.compute: "fast" is not sleep or spin`}},
		{"simulator fixed slots in batching mode", "simulator:\n  max_num_seqs: 4\n  fixed_slots: 4\n",
			[]string{":3: simulator.fixed_slots: 4 applies to fixed mode only"}},
		{"simulator output tokens", "simulator:\n  profile: fixed\n  output_tokens: -1\n",
			[]string{":3: simulator.output_tokens: -1 must be at least 1"}},
		{"negative energy price", "plan:\n  energy_cost_per_kwh: -0.1\n",
			[]string{":2: plan.energy_cost_per_kwh: is -0.1: must be ≥ 0"}},
		{"infinite energy price", "plan:\n  energy_cost_per_kwh: .inf\n",
			[]string{":2: plan.energy_cost_per_kwh: is +Inf: must be ≥ 0"}},
		{"not a mapping", "- 1\n- 2\n",
			[]string{":1: the configuration must be a mapping"}},
		{"syntax", "target: [\n",
			[]string{"kneecap.yaml:"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.yaml)
			_, err := Load(p)
			if err == nil {
				t.Fatalf("Load(%q) = nil error", tc.yaml)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, p) {
				t.Errorf("error %q does not start with the file name %s", msg, p)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q does not contain %q", msg, w)
				}
			}
			for _, line := range Problems(err) {
				if !strings.HasPrefix(line, p) {
					t.Errorf("problem line %q does not name the file", line)
				}
			}
		})
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	p := writeConfig(t, `target:
  url: ftp://host/v1
  api: grpc
sweep:
  levels: [8, 4]
  duration: 0s
  ci_target: 0
  stop: {max_error_rate: -1}
  client_tolerance: 0
  retry_excluded: 5
analysis: {knee_gain: 3}
`)
	_, err := Load(p)
	probs := Problems(err)
	mustHave := []string{
		p + ":2: target.url:",
		p + ":2: target.model: missing",
		p + ":3: target.api:",
		p + ":5: sweep.levels:",
		p + ":6: sweep.duration:",
		p + ":7: sweep.ci_target:",
		p + ":8: sweep.stop.max_error_rate:",
		p + ":9: sweep.client_tolerance: is 0: must be in (0, 1)",
		p + ":10: sweep.retry_excluded: is 5: must be in [0, 4]",
		p + ":11: analysis.knee_gain:",
	}
	if len(probs) != len(mustHave) {
		t.Errorf("got %d problems, want %d:\n%s", len(probs), len(mustHave), strings.Join(probs, "\n"))
	}
	for _, w := range mustHave {
		found := false
		for _, line := range probs {
			if strings.HasPrefix(line, w) {
				found = true
			}
		}
		if !found {
			t.Errorf("no problem starting %q in:\n%s", w, strings.Join(probs, "\n"))
		}
	}
}

// TestLoadConfigOneRound: problems of single keys (wrong types, unknown keys) and
// Validate's come in one error, in file-line order; a syntax error comes alone.
func TestLoadConfigOneRound(t *testing.T) {
	p := writeConfig(t, "sweep:\n  ci_target: 1.5\n  min_requests: many\n  levels: [2, 1]\nbogus: 1\n")
	_, err := Load(p)
	probs := Problems(err)
	want := []string{":2: sweep.ci_target:", ":3: sweep.min_requests: cannot unmarshal", ":4: sweep.levels:", ":5: bogus: unknown key (the top level takes name, target"}
	if len(probs) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(probs), len(want), strings.Join(probs, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(probs[i], p+w) {
			t.Errorf("problem %d is %q, want it to start %q", i+1, probs[i], p+w)
		}
	}
	if _, err := Read(p); !KeyProblems(err) {
		t.Errorf("ReadConfig: KeyProblems(%v) = false for problems of single keys", err)
	}
	p = writeConfig(t, "sweep: [\n")
	if _, err := Read(p); err == nil || KeyProblems(err) {
		t.Errorf("ReadConfig of a syntax error: err %v, KeyProblems true; want an error that is not", err)
	}
}

func TestValidateOverrideNamesFlag(t *testing.T) {
	c, err := Read(writeConfig(t, "sweep:\n  levels: [1, 2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.Sweep.Levels = sweep.LevelsSpec{List: []int{4, 2}}
	c.Override("sweep.levels", "--levels")
	err = c.Validate()
	if err == nil || !strings.HasPrefix(err.Error(), "--levels: sweep.levels: levels must increase") {
		t.Errorf("Validate = %v, want it to name --levels", err)
	}
	// A flag that makes another key's value wrong is named (not that key's line).
	c, err = Read(writeConfig(t, "workload:\n  input_tokens: {dist: fixed, mean: 512}\n  shared_prefix: {count: 1, tokens: 256}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.Workload.InputTokens = workload.Dist{Dist: workload.DistFixed, Mean: 128}
	c.Override("workload.input_tokens", "--input-tokens")
	if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), "--input-tokens: workload.shared_prefix.tokens: is 256: must be below the shortest prompt workload.input_tokens can draw (128)") {
		t.Errorf("Validate = %v, want it to name --input-tokens", err)
	}
	// A config built in code has no positions: the key alone names the problem.
	d := Default()
	d.Sweep.Duration = 0
	if err := d.Validate(); err == nil || !strings.HasPrefix(err.Error(), "sweep.duration: ") {
		t.Errorf("Validate = %v", err)
	}
}

func TestRedacted(t *testing.T) {
	c := Default()
	c.Target.URL = "https://user:hunter2@api.example.com/v1?api_key=sk-123&region=eu"
	c.Target.Model = "m"
	c.ServerMetrics.URL = "http://admin:pw@host:8000/metrics"
	c.Target.ExtraBody = map[string]any{
		"max_tokens":     7,
		"stop_token_ids": []any{1, 2},
		"api_key":        "sk-abc",
		"Authorization":  "Bearer sk-abc",
		"nested":         map[string]any{"auth_token": "t0k", "top_p": 0.9},
		"list":           []any{map[string]any{"password": "p"}},
	}
	r := c.Redacted()
	if strings.Contains(r.Target.URL, "hunter2") || strings.Contains(r.Target.URL, "user") || strings.Contains(r.Target.URL, "sk-123") {
		t.Errorf("target url not redacted: %s", r.Target.URL)
	}
	if !strings.Contains(r.Target.URL, "region=eu") || !strings.HasPrefix(r.Target.URL, "https://api.example.com/v1?") {
		t.Errorf("target url over-redacted: %s", r.Target.URL)
	}
	if r.ServerMetrics.URL != "http://host:8000/metrics" {
		t.Errorf("metrics url = %s", r.ServerMetrics.URL)
	}
	b, err := yaml.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "sk-abc", "sk-123", "t0k", ": p\n", "pw@"} {
		if strings.Contains(string(b), secret) {
			t.Errorf("redacted YAML contains %q:\n%s", secret, b)
		}
	}
	eb := r.Target.ExtraBody
	if eb["max_tokens"] != 7 || eb["nested"].(map[string]any)["top_p"] != 0.9 {
		t.Errorf("non-secret keys changed: %v", eb)
	}
	if !reflect.DeepEqual(eb["stop_token_ids"], []any{1, 2}) {
		t.Errorf("stop_token_ids redacted: %v", eb["stop_token_ids"])
	}
	// The original is untouched.
	if c.Target.ExtraBody["api_key"] != "sk-abc" || c.Target.ExtraBody["nested"].(map[string]any)["auth_token"] != "t0k" {
		t.Error("Redacted modified the original config")
	}
}

// TestConfigRoundTrip checks that a config written as YAML (as config.yaml is) reads back
// equal, including durations and the levels spec in both forms.
func TestConfigRoundTrip(t *testing.T) {
	for _, spec := range []sweep.LevelsSpec{{List: []int{1, 2, 4}}, {Start: 2, Max: 64, Factor: 2}, {Start: 8, Max: 64, Step: 8}} {
		c := Default()
		c.Name = "rt"
		c.Sweep.Levels = spec
		c.Target.ExtraBody = map[string]any{"ignore_eos": true}
		b, err := yaml.Marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Load(writeConfig(t, string(b)))
		if err != nil {
			t.Fatalf("reload:\n%s\n%v", b, err)
		}
		got.src, c.src = nil, nil
		if !reflect.DeepEqual(got, c) {
			t.Errorf("round trip changed the config:\n%s\ngot  %+v\nwant %+v", b, got, c)
		}
	}
}

// FuzzParseConfig checks that no input makes the decoder panic, and that every error it
// returns names the file.
func FuzzParseConfig(f *testing.F) {
	for _, s := range []string{
		"", "name: x\n", "sweep: {levels: [1, 2, 4]}\n", "sweep: {levels: {start: 1, max: 8, factor: 2}}\n",
		"sweep:\n  duration: 30\n", "target: {extra_body: {a: [1, {b: 2}]}}\n", "&a [*a]", "sweep: {levels: 3}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseConfig("f.yaml", []byte(s))
		if err != nil && !strings.HasPrefix(err.Error(), "f.yaml") {
			t.Errorf("error does not name the file: %v", err)
		}
	})
}

// TestURLErrorsRedacted: a malformed or unreachable URL's error never repeats its userinfo
// or a secret-looking query parameter (DESIGN §7).
func TestURLErrorsRedacted(t *testing.T) {
	const secret = "s3cr3t-pw"
	c := Default()
	c.Target.URL = "http://user:" + secret + "@host:badport/v1"
	c.Target.Model = "m"
	c.ServerMetrics.URL = "ftp://user:" + secret + "@host/metrics"
	err := c.Validate()
	if err == nil || !strings.Contains(err.Error(), "target.url") || strings.Contains(err.Error(), secret) {
		t.Errorf("Validate = %v: want a target.url problem without the password", err)
	}
	if _, err := server.NewScraper(server.ServerMetricsConfig{URL: c.ServerMetrics.URL}, nil); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("NewScraper = %v: want an error without the password", err)
	}
	// A closed loopback port: the transport error names the URL without the token.
	s, err := server.NewScraper(server.ServerMetricsConfig{URL: "http://127.0.0.1:1/metrics?token=" + secret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Scrape(t.Context()); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("Scrape = %v: want an error without the token", err)
	}
}

// TestDecodeProblemsNameKeys: yaml.v3's messages name Go types ("field x not found in type
// sweep.Protocol"); the problems a user reads name the key's path and what its section takes,
// and a section given a scalar asks for a mapping.
func TestDecodeProblemsNameKeys(t *testing.T) {
	p := writeConfig(t, "sweep:\n  stop: {plateu: true}\nslo: 3\n")
	_, err := Read(p)
	got := Problems(err)
	want := []string{
		p + ":2: sweep.stop.plateu: unknown key (sweep.stop takes plateau, overload, max_error_rate, stop_ttft, budget, max_unsustainable)",
		p + ":3: slo: cannot unmarshal !!int `3` into a mapping of keys",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("problems\n%q\nwant\n%q", got, want)
	}
	for _, g := range got {
		if strings.Contains(g, "record.StopRules") || strings.Contains(g, "analysis.SLO") {
			t.Errorf("problem names a Go type: %q", g)
		}
	}
}

// TestBaseURLRefused: a base URL with a query string, a fragment or whitespace around it is
// refused with a problem that names the key and repeats no secret; server_metrics.url may
// have a query (a token for a proxy) but no whitespace.
func TestBaseURLRefused(t *testing.T) {
	const secret = "sk-QUERY-secret"
	for _, tc := range []struct{ key, url, want string }{
		{"target.url", "http://127.0.0.1:8000/v1?api_key=" + secret, `target.url: "http://127.0.0.1:8000/v1" followed by a query string`},
		{"target.url", "http://127.0.0.1:8000/v1?", `target.url: "http://127.0.0.1:8000/v1" followed by a query string`},
		{"target.url", "http://127.0.0.1:8000/v1#" + secret, `target.url: "http://127.0.0.1:8000/v1" followed by a fragment`},
		{"target.url", "http://127.0.0.1:8000/v1 ", `target.url: "http://127.0.0.1:8000/v1" has whitespace before or after it`},
		{"target.url", "\thttp://u:" + secret + "@127.0.0.1:8000/v1", `target.url: "http://127.0.0.1:8000/v1" has whitespace`},
		{"server_metrics.url", "http://127.0.0.1:8000/metrics\n", `server_metrics.url: "http://127.0.0.1:8000/metrics" has whitespace`},
	} {
		c := Default()
		c.Target.URL, c.Target.Model = "http://127.0.0.1:8000/v1", "m"
		if tc.key == "target.url" {
			c.Target.URL = tc.url
		} else {
			c.ServerMetrics.URL = tc.url
		}
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), secret) {
			t.Errorf("%s %q: Validate = %v, want %q without the secret", tc.key, tc.url, err, tc.want)
		}
	}
	c := Default()
	c.Target.URL, c.Target.Model = "http://127.0.0.1:8000/v1", "m"
	c.ServerMetrics.URL = "http://127.0.0.1:8000/metrics?token=t"
	if err := c.Validate(); err != nil {
		t.Errorf("a metrics URL with a query: %v", err)
	}
}

// TestConfigSecrets: the secrets of a configuration, besides the API key.
func TestConfigSecrets(t *testing.T) {
	c := Default()
	c.Target.URL = "http://user:pw-1234@127.0.0.1:8000/v1"
	c.ServerMetrics.URL = "http://127.0.0.1:8000/metrics?access_token=tok-1234"
	c.Target.ExtraBody = map[string]any{"api_key": "body-1234", "temperature": 0}
	got := strings.Join(c.Secrets(), " ")
	if got != "pw-1234 user:pw-1234 tok-1234 body-1234" {
		t.Errorf("Secrets = %q", got)
	}
}

// TestUnitHintInTheKeysUnit: a bare number for a duration is hinted in the unit nearest the
// key's default (issue 26: a TTFT SLO of 500 suggested 500s); a key whose default is 0 is
// hinted in seconds.
func TestUnitHintInTheKeysUnit(t *testing.T) {
	for _, tc := range []struct{ v, key, want string }{
		{"500", "slo.ttft_p95", `"500ms"`}, {"50", "slo.tpot_p95", `"50ms"`}, {"20", "slo.e2e_p95", `"20s"`},
		{"5", "sweep.warmup", `"5s"`}, {"3", "sweep.max_duration", `"3m"`}, {"2", "sweep.cooldown", `"2s"`},
		{"5", "no.such_key", `"5s"`},
	} {
		if got := unitProblemAt(tc.v, tc.key); !strings.Contains(got, "write "+tc.want) {
			t.Errorf("%s: %s: %q, want it to suggest %s", tc.key, tc.v, got, tc.want)
		}
	}
}
