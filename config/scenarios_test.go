package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/workload"
)

const gridYAML = `name: grid
workload:
  input_tokens: {dist: fixed, mean: 512}
  think_time: 10ms
sweep:
  levels: [1, 2, 4]
scenarios:
  - name: chat
    input_tokens: {mean: 2048}
    output_tokens: {dist: fixed, mean: 256}
  - {name: long-out, output_tokens: {mean: 1024}, fixed_output: false, levels: [1, 8]}
  - name: multi-turn
    sessions: {turns: {dist: fixed, mean: 3}, think_time: 1s}
`

// TestScenariosDecode: scenarios decode, each overlays its keys on the base, and keys it
// leaves out keep the base's values.
func TestScenariosDecode(t *testing.T) {
	c, err := Load(writeConfig(t, gridYAML))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Grid() || len(c.Scenarios) != 3 {
		t.Fatalf("scenarios = %+v", c.Scenarios)
	}
	a := c.ScenarioConfig(0)
	if a.Name != "grid-chat" || a.Grid() {
		t.Errorf("scenario 0: name %q, scenarios %v", a.Name, a.Scenarios)
	}
	if want := (workload.Dist{Dist: "fixed", Mean: 2048}); a.Workload.InputTokens != want {
		t.Errorf("scenario 0 input = %+v, want %+v", a.Workload.InputTokens, want)
	}
	if a.Workload.OutputTokens.Mean != 256 || !a.Workload.FixedOutput || a.Workload.ThinkTime != 10*time.Millisecond {
		t.Errorf("scenario 0 workload = %+v", a.Workload)
	}
	if l, _ := a.Sweep.Levels.Expand(); !reflect.DeepEqual(l, []int{1, 2, 4}) {
		t.Errorf("scenario 0 levels = %v, want the base's", l)
	}
	b := c.ScenarioConfig(1)
	if b.Workload.InputTokens.Mean != 512 || b.Workload.OutputTokens.Mean != 1024 || b.Workload.FixedOutput {
		t.Errorf("scenario 1 workload = %+v", b.Workload)
	}
	if l, _ := b.Sweep.Levels.Expand(); !reflect.DeepEqual(l, []int{1, 8}) {
		t.Errorf("scenario 1 levels = %v, want [1 8]", l)
	}
	if s := c.ScenarioConfig(2).Workload.Sessions; s == nil || s.Turns.Mean != 3 || s.ThinkTime != time.Second || a.Workload.Sessions != nil {
		t.Errorf("scenario 2 sessions = %+v, scenario 0's %+v", s, a.Workload.Sessions)
	}
	if c.Workload.InputTokens.Mean != 512 || c.Scenarios[0].InputTokens.Mean != 2048 {
		t.Error("ScenarioConfig changed the base")
	}
	if err := a.Validate(); err != nil {
		t.Errorf("scenario config invalid: %v", err)
	}
}

// TestScenariosProblems: bad names, duplicates, unknown keys and a scenario's bad workload are
// each named at FILE:LINE of the scenario's key, all in one round.
func TestScenariosProblems(t *testing.T) {
	p := writeConfig(t, `scenarios:
  - name: ok
  - name: ok
  - name: "a/b"
  - input_tokens: {mean: 10}
  - name: bad-len
    input_tokens: {mean: -3}
  - name: typo
    ouput_tokens: {mean: 3}
  - name: report.md
`)
	_, err := Load(p)
	if err == nil {
		t.Fatal("Load accepted bad scenarios")
	}
	got := strings.Join(Problems(err), "\n")
	for _, want := range []string{
		p + `:3: scenarios[1].name: "ok": also the name of scenario 1 (line 2)`,
		p + `:4: scenarios[2].name: "a/b": must be`,
		p + `:5: scenarios[3].name: missing`,
		p + `:7: scenarios[4].input_tokens.mean:`,
		p + `:9: scenarios[5].ouput_tokens: unknown key (scenarios[5] takes name, input_tokens, output_tokens,`,
		p + `:10: scenarios[6].name: "report.md": is the name of one of the grid's own files`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}

// TestScenarioCoversWorkload: every workload key can be set by a scenario (Scenario has a
// field of that YAML key for each field of workload.WorkloadConfig) but trace: a trace replay is
// open loop (DESIGN §3.9), and a grid runs closed-loop sweeps.
func TestScenarioCoversWorkload(t *testing.T) {
	keys := map[string]bool{}
	for _, k := range yamlKeys(reflect.TypeOf(Scenario{})) {
		keys[k] = true
	}
	for _, k := range yamlKeys(reflect.TypeOf(workload.WorkloadConfig{})) {
		if !keys[k] && k != "trace" {
			t.Errorf("scenarios cannot set workload.%s", k)
		}
	}
}

// TestCheckName: a name read from a results directory that becomes a path element is refused
// when it could leave the directory, hide, or carry a control character; the error quotes it
// escaped and clipped.
func TestCheckName(t *testing.T) {
	for _, name := range []string{"a", "A-1.b_c", strings.Repeat("x", 64)} {
		if err := CheckName(name); err != nil {
			t.Errorf("CheckName(%q) = %v, want nil", name, err)
		}
	}
	for _, name := range []string{"", ".", "..", "../../x", "a/b", `a\b`, "/abs", ".hidden", "a\x1b[31m", "a b",
		"a\x00", strings.Repeat("x", 65), "scenarios.json", "config.yaml"} {
		err := CheckName(name)
		if err == nil {
			t.Errorf("CheckName(%q) = nil, want an error", name)
			continue
		}
		if msg := err.Error(); strings.ContainsAny(msg, "\x1b\x00") || len(msg) > 300 {
			t.Errorf("CheckName(%q): error carries the raw name or is too long: %q", name, msg)
		}
	}
}
