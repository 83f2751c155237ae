package config

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// Scenario is one shape of a scenario grid (DESIGN §5.3, §9.5): a name and the workload keys
// (and optionally the levels) that differ from the base configuration. `kneecap sweep` runs
// the base configuration once per scenario, with the scenario's keys overlaid, each into
// DIR/<name>/. A key left out keeps the base's value; a distribution given replaces the base's
// whole (its dist defaults to fixed).
type Scenario struct {
	// Name names the scenario and its subdirectory: letters, digits, '.', '_' and '-'.
	Name string `yaml:"name"`
	// The workload keys a scenario may set (each as workload.KEY of §9.5); not trace, a
	// replay being open loop.
	InputTokens  *workload.Dist           `yaml:"input_tokens,omitempty"`
	OutputTokens *workload.Dist           `yaml:"output_tokens,omitempty"`
	FixedOutput  *bool                    `yaml:"fixed_output,omitempty"`
	Dataset      *string                  `yaml:"dataset,omitempty"`
	PrefixCache  *bool                    `yaml:"prefix_cache,omitempty"`
	ThinkTime    *time.Duration           `yaml:"think_time,omitempty"`
	Seed         *int64                   `yaml:"seed,omitempty"`
	PromptSizing *string                  `yaml:"prompt_sizing,omitempty"`
	Tokenizer    *string                  `yaml:"tokenizer,omitempty"`
	Sessions     *workload.SessionsConfig `yaml:"sessions,omitempty"`
	SharedPrefix *workload.SharedPrefix   `yaml:"shared_prefix,omitempty"`
	Models       *[]workload.ModelWeight  `yaml:"models,omitempty"`
	Cancel       *workload.CancelConfig   `yaml:"cancel,omitempty"`
	Batch        *int                     `yaml:"batch,omitempty"`
	Levels       *sweep.LevelsSpec        `yaml:"levels,omitempty"`
}

// gridFiles are the files of a grid's results directory besides the scenarios'
// subdirectories; a scenario may not be named like one.
var gridFiles = []string{"config.yaml", "scenarios.json", "report.md", "report.html", "pareto.png", "pareto.svg",
	"levels.json", "records.jsonl", "analysis.json", "summary.csv", "compare.md", "compare.html", "compare.json",
	"compare_throughput.png", "compare_throughput.svg", "compare_latency.png", "compare_latency.svg"}

// scenarioNameRE is a filesystem-safe scenario name.
var scenarioNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// CheckName checks a scenario's name wherever it is read: from a configuration, or from a
// results directory (config.yaml, scenarios.json) that was edited or came from someone else.
// The name becomes one element of a path under the grid's directory, so it must be 1–64
// letters, digits, '.', '_' or '-', starting with a letter or digit (no separator, no "..",
// no control character), and not the name of one of the grid's own files. The error quotes
// the name escaped.
func CheckName(name string) error {
	switch {
	case !scenarioNameRE.MatchString(name):
		if len(name) > 80 {
			name = name[:80] + "…"
		}
		return fmt.Errorf("%q: must be 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit (it names the scenario's subdirectory)", name)
	case isGridFile(name):
		return fmt.Errorf("%q: is the name of one of the grid's own files", name)
	}
	return nil
}

// Grid reports whether the configuration is a scenario grid.
func (c Config) Grid() bool { return len(c.Scenarios) > 0 }

// ScenarioConfig returns the configuration of scenario i of the grid: c with the scenario's
// keys overlaid, no scenarios, and the run named NAME (BASE-NAME when c has a name). Its
// provenance names the scenario's lines for the keys it set, so that Validate of it names
// FILE:LINE of the scenario.
func (c Config) ScenarioConfig(i int) Config {
	sc := c.Scenarios[i]
	out := c
	out.Scenarios = nil
	out.Name = sc.Name
	if c.Name != "" {
		out.Name = c.Name + "-" + sc.Name
	}
	w := reflect.ValueOf(&out.Workload).Elem()
	for _, o := range sc.overrides() {
		f := w.FieldByName(o.field)
		if f.Kind() == reflect.Pointer { // workload.sessions: a copy of the scenario's
			p := reflect.New(o.value.Type())
			p.Elem().Set(o.value)
			f.Set(p)
			continue
		}
		f.Set(o.value)
	}
	if sc.Levels != nil {
		out.Sweep.Levels = *sc.Levels
	}
	if c.src != nil {
		s := &source{file: c.src.file, lines: maps.Clone(c.src.lines), origins: maps.Clone(c.src.origins)}
		prefix := scenarioKey(i, "")
		for k, l := range c.src.lines {
			rest, ok := strings.CutPrefix(k, prefix)
			if !ok || rest == "name" {
				continue
			}
			if rest == "levels" || strings.HasPrefix(rest, "levels.") {
				s.lines["sweep."+rest] = l
			} else {
				s.lines["workload."+rest] = l
			}
		}
		out.src = s
	}
	return out
}

// scenarioKey is the key path of a scenario's key: "scenarios[1].input_tokens".
func scenarioKey(i int, key string) string { return fmt.Sprintf("scenarios[%d].%s", i, key) }

// override is one workload field a scenario sets: its Go field name, YAML key and value.
type override struct {
	field, key string
	value      reflect.Value
}

// overrides lists the workload fields the scenario sets, matched to workload.WorkloadConfig by
// YAML key.
func (sc Scenario) overrides() []override {
	wt := reflect.TypeOf(workload.WorkloadConfig{})
	byKey := map[string]string{}
	for i := range wt.NumField() {
		name, _, _ := strings.Cut(wt.Field(i).Tag.Get("yaml"), ",")
		byKey[name] = wt.Field(i).Name
	}
	var out []override
	v := reflect.ValueOf(sc)
	for i := range v.NumField() {
		f := v.Type().Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		field, ok := byKey[key]
		if !ok || f.Type.Kind() != reflect.Pointer || v.Field(i).IsNil() {
			continue
		}
		val := v.Field(i).Elem()
		if d, ok := val.Interface().(workload.Dist); ok && d.Dist == "" {
			d.Dist = workload.DistFixed
			val = reflect.ValueOf(d)
		}
		out = append(out, override{field: field, key: key, value: val})
	}
	return out
}

// scenarios checks scenarios:: names (non-empty, unique, filesystem-safe, not one of the
// grid's files), no shards and closed-loop sweeps only, and each scenario's effective workload
// and levels, a problem named at the scenario's key.
func (v *validation) scenarios() {
	c := v.c
	if !c.Grid() {
		return
	}
	if c.Shard.Sharded() {
		v.bad("scenarios", "a scenario grid cannot be sharded (shard.count %d): run each scenario's sweep as its own sharded sweep", c.Shard.Count)
	}
	if c.Sweep.RateMode() {
		v.bad("scenarios", "a scenario grid runs closed-loop sweeps: sweep.mode must be concurrency")
	}
	base := map[string]bool{}
	bv := &validation{c: c}
	bv.workload()
	for _, e := range bv.errs {
		base[e.Error()] = true
	}
	seen := map[string]int{}
	for i, sc := range c.Scenarios {
		nameKey := scenarioKey(i, "name")
		switch {
		case sc.Name == "":
			v.badAt(nameKey, []string{nameKey, fmt.Sprintf("scenarios[%d]", i)}, "missing: every scenario needs a name (it names its subdirectory)")
		case CheckName(sc.Name) != nil:
			v.bad(nameKey, "%v", CheckName(sc.Name))
		default:
			if j, dup := seen[sc.Name]; dup {
				v.bad(nameKey, "%q: also the name of scenario %d (line %s): names must be unique", sc.Name, j+1, lineOf(c.where(scenarioKey(j, "name"))))
			}
			seen[sc.Name] = i
		}
		v.scenario(i, sc, base)
	}
}

// scenario checks scenario i's effective workload and levels; a problem of a key it set is
// named at the scenario's key, one of the base's (reported by the base's checks) is left out.
func (v *validation) scenario(i int, sc Scenario, base map[string]bool) {
	cfg := v.c.ScenarioConfig(i)
	sv := &validation{c: &cfg}
	sv.workload()
	if sc.Levels != nil {
		if _, err := cfg.Sweep.Levels.Expand(); err != nil {
			sv.bad("sweep.levels", "%v", err)
		}
	}
	set := map[string]bool{}
	for _, o := range sc.overrides() {
		set[o.key] = true
	}
	if sc.Levels != nil {
		set["levels"] = true
	}
	for _, err := range sv.errs {
		e, ok := err.(*Error)
		if !ok {
			continue
		}
		rest, _ := strings.CutPrefix(e.Key, "workload.")
		rest, _ = strings.CutPrefix(rest, "sweep.")
		top, _, _ := strings.Cut(rest, ".")
		if set[top] {
			key := scenarioKey(i, rest)
			v.errs = append(v.errs, &Error{Where: v.c.where(key), Key: key, Msg: e.Msg})
		} else if !base[e.Error()] {
			v.errs = append(v.errs, &Error{Where: e.Where, Key: e.Key, Msg: fmt.Sprintf("%s (in scenario %q)", e.Msg, sc.Name)})
		}
	}
}

func isGridFile(name string) bool {
	for _, f := range gridFiles {
		if strings.EqualFold(f, name) {
			return true
		}
	}
	return false
}

// lineOf returns the LINE of "FILE:LINE", else where itself.
func lineOf(where string) string {
	if i := strings.LastIndexByte(where, ':'); i >= 0 {
		return where[i+1:]
	}
	return where
}
