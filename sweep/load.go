package sweep

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/sim"
)

// maxConfigBytes bounds the size of a configuration file.
const maxConfigBytes = 4 << 20

// maxLevels bounds the number of levels a progression may expand to.
const maxLevels = 1000

// DefaultConfig returns the configuration every file is decoded over (DESIGN §9): chat API,
// key from OPENAI_API_KEY, 10 min request timeout, 512 input / 128 output tokens (fixed, with
// ignore_eos), levels 1, 2, 4 … 256, every stop rule on, SLO TTFT p95 ≤ 2 s and TPOT p95 ≤ 50 ms,
// knee gain 10%, server metrics every 1 s, per-chunk records, and the demo simulator.
func DefaultConfig() Config {
	recordChunks := true
	return Config{
		Name: "",
		Target: TargetConfig{
			API:            APIChat,
			APIKeyEnv:      "OPENAI_API_KEY",
			RequestTimeout: 10 * time.Minute,
		},
		Simulator: sim.Config{Profile: "demo"},
		Workload: WorkloadConfig{
			InputTokens:  Dist{Dist: "fixed", Mean: 512},
			OutputTokens: Dist{Dist: "fixed", Mean: 128},
			FixedOutput:  true,
			Seed:         1,
		},
		Sweep: Protocol{
			Levels:       LevelsSpec{Start: 1, Max: 256, Factor: 2},
			Warmup:       5 * time.Second,
			WarmupMax:    2 * time.Minute,
			Duration:     30 * time.Second,
			MinRequests:  100,
			MaxDuration:  3 * time.Minute,
			CITarget:     0.05,
			DrainTimeout: 60 * time.Second,
			Stop: StopRules{
				Plateau:      true,
				Overload:     true,
				MaxErrorRate: 0.05,
				StopTTFT:     20 * time.Second,
			},
			RecordChunks: &recordChunks,
		},
		SLO:           SLOConfig{TTFTP95: 2 * time.Second, TPOTP95: 50 * time.Millisecond},
		ServerMetrics: ServerMetricsConfig{Interval: time.Second},
		Analysis:      AnalysisConfig{KneeGain: 0.10},
		Plan:          PlanConfig{GPUsPerReplica: 1},
	}
}

// source remembers where a configuration's values came from, so validation problems can name
// FILE:LINE (or the flag that set the value).
type source struct {
	// file is the configuration file's path.
	file string
	// lines maps a key path ("sweep.levels.factor") to its line in file.
	lines map[string]int
	// origins maps a key path to what overrode the file's value (for example "--levels").
	origins map[string]string
}

// Override records that the value at key (a dotted path such as "sweep.levels") was set by
// origin (for example "--levels") rather than by the file, so Validate names origin for it.
func (c *Config) Override(key, origin string) {
	s := &source{origins: map[string]string{key: origin}}
	if c.src != nil {
		s.file = c.src.file
		s.lines = c.src.lines
		for k, v := range c.src.origins {
			if k != key {
				s.origins[k] = v
			}
		}
	}
	c.src = s
}

// File returns the configuration file the config was read from, or "" when it was built in
// code.
func (c *Config) File() string {
	if c.src == nil {
		return ""
	}
	return c.src.file
}

// where returns the position of the first key found: "--flag", "FILE:LINE", "FILE" or "".
func (c *Config) where(keys ...string) string {
	if c.src == nil {
		return ""
	}
	at := func(k string) (string, bool) {
		if o, ok := c.src.origins[k]; ok {
			return o, true
		}
		if l, ok := c.src.lines[k]; ok {
			return fmt.Sprintf("%s:%d", c.src.file, l), true
		}
		return "", false
	}
	for _, k := range keys {
		if w, ok := at(k); ok {
			return w
		}
	}
	if len(keys) > 0 {
		for p := parentKey(keys[0]); p != ""; p = parentKey(p) {
			if w, ok := at(p); ok {
				return w
			}
		}
	}
	return c.src.file
}

func parentKey(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

// ConfigError is one configuration problem: the key path, where it was set (FILE:LINE, a flag,
// or empty), and what is wrong.
type ConfigError struct {
	// Where is "FILE:LINE", "FILE", a flag name such as "--levels", or "".
	Where string
	// Key is the dotted key path, for example "sweep.levels".
	Key string
	// Msg says what is wrong.
	Msg string
}

// Error formats the problem as one line: "WHERE: KEY: MSG".
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Where != "" {
		b.WriteString(e.Where)
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Problems splits an error returned by LoadConfig, ReadConfig or Validate into its one-line
// problems.
func Problems(err error) []string {
	if err == nil {
		return nil
	}
	var out []string
	var walk func(error)
	walk = func(e error) {
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		for _, line := range strings.Split(e.Error(), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				out = append(out, line)
			}
		}
	}
	walk(err)
	return out
}

// LoadConfig reads a YAML configuration file over DefaultConfig and validates it. Every
// problem is reported at once, one per line, each naming FILE:LINE: the problems of single
// keys that ReadConfig finds and Validate's, in file-line order.
func LoadConfig(path string) (Config, error) {
	c, err := ReadConfig(path)
	if err != nil && !KeyProblems(err) {
		return c, err
	}
	return c, JoinProblems(err, c.Validate())
}

// ReadConfig reads a YAML configuration file over DefaultConfig without validating it (flags
// may still override values; call Validate afterwards). Unknown keys, wrong types and
// durations without a unit are errors naming FILE:LINE; the Config returned with them (see
// KeyProblems) holds every other value of the file, so that Validate can report the rest of
// the problems in the same round.
func ReadConfig(path string) (Config, error) {
	c := DefaultConfig()
	f, err := os.Open(path)
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigBytes+1))
	if err != nil {
		return c, fmt.Errorf("read config: %s: %w", path, err)
	}
	if len(data) > maxConfigBytes {
		return c, fmt.Errorf("read config: %s: larger than %d bytes", path, maxConfigBytes)
	}
	return parseConfig(path, data)
}

var lineRE = regexp.MustCompile(`^line (\d+): (.*)$`)

// parseConfig decodes data (the contents of file) over DefaultConfig.
func parseConfig(file string, data []byte) (Config, error) {
	c := DefaultConfig()
	src := &source{file: file, lines: map[string]int{}}
	c.src = src

	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := lineRE.FindStringSubmatch(msg); m != nil {
			return c, fmt.Errorf("%s:%s: %s", file, m[1], m[2]) // FILE:LINE like every other problem
		}
		return c, fmt.Errorf("%s: %s", file, msg)
	}
	if root.Kind == 0 || len(root.Content) == 0 {
		return c, nil // empty file: defaults
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		if doc.Kind == yaml.ScalarNode && doc.Tag == "!!null" {
			return c, nil
		}
		return c, fmt.Errorf("%s:%d: the configuration must be a mapping of keys", file, doc.Line)
	}

	var errs []error
	durLines := map[int]bool{}
	w := walker{file: file, lines: src.lines, durLines: durLines, errs: &errs}
	w.walk(doc, reflect.TypeOf(Config{}), "")

	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil {
		var te *yaml.TypeError
		if !errors.As(err, &te) {
			return c, fmt.Errorf("%s: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
		}
		lineKeys := invert(src.lines)
		for _, msg := range te.Errors {
			m := lineRE.FindStringSubmatch(msg)
			if m == nil {
				errs = append(errs, fmt.Errorf("%s: %s", file, msg))
				continue
			}
			n, _ := strconv.Atoi(m[1])
			if durLines[n] && strings.Contains(m[2], "time.Duration") {
				continue // already reported as "duration needs a unit"
			}
			ce := &ConfigError{Where: fmt.Sprintf("%s:%d", file, n), Msg: m[2]}
			if !strings.HasPrefix(m[2], "field ") && !namesKey(m[2]) {
				ce.Key = lineKeys[n]
			}
			errs = append(errs, ce)
		}
	}
	if len(errs) == 0 {
		return c, nil
	}
	sortProblems(errs)
	return c, &keyProblems{errs: errs}
}

// keyProblems is ReadConfig's error for a file that parsed but has problems of single keys:
// unknown keys, wrong types, durations without a unit. Each such key keeps its default.
type keyProblems struct{ errs []error }

func (k *keyProblems) Error() string   { return errors.Join(k.errs...).Error() }
func (k *keyProblems) Unwrap() []error { return k.errs }

// KeyProblems reports whether err, returned by ReadConfig, lists only problems of single keys
// (unknown keys, wrong types, durations without a unit): the file parsed, and the Config
// returned with err holds every other value. Any other error (unreadable file, YAML syntax,
// a document that is not a mapping) leaves nothing to validate.
func KeyProblems(err error) bool {
	var k *keyProblems
	return errors.As(err, &k)
}

// JoinProblems joins configuration problems (ReadConfig's key problems, Validate's; nil
// errors are skipped) into one error whose problems are in file-line order, for Problems.
func JoinProblems(errs ...error) error {
	var flat []error
	var walk func(error)
	walk = func(e error) {
		if e == nil {
			return
		}
		if j, ok := e.(interface{ Unwrap() []error }); ok {
			for _, x := range j.Unwrap() {
				walk(x)
			}
			return
		}
		flat = append(flat, e)
	}
	for _, e := range errs {
		walk(e)
	}
	sortProblems(flat)
	return errors.Join(flat...)
}

// namesKey reports whether msg already starts with a key path ("sweep.levels: …").
func namesKey(msg string) bool {
	k, _, ok := strings.Cut(msg, ": ")
	return ok && strings.Contains(k, ".") && !strings.ContainsAny(k, " `")
}

// invert maps each line to the deepest key path on it.
func invert(lines map[string]int) map[int]string {
	out := map[int]string{}
	for k, l := range lines {
		if cur, ok := out[l]; !ok || strings.Count(k, ".") > strings.Count(cur, ".") {
			out[l] = k
		}
	}
	return out
}

// sortProblems orders ConfigErrors by file line, keeping other errors in place at the end.
func sortProblems(errs []error) {
	line := func(e error) int {
		var ce *ConfigError
		if errors.As(e, &ce) {
			if i := strings.LastIndexByte(ce.Where, ':'); i >= 0 {
				if n, err := strconv.Atoi(ce.Where[i+1:]); err == nil {
					return n
				}
			}
		}
		return math.MaxInt
	}
	sort.SliceStable(errs, func(i, j int) bool { return line(errs[i]) < line(errs[j]) })
}

var durationType = reflect.TypeOf(time.Duration(0))

// walker records the line of every key and rejects durations written without a unit.
type walker struct {
	file     string
	lines    map[string]int
	durLines map[int]bool
	errs     *[]error
}

func (w walker) walk(n *yaml.Node, t reflect.Type, prefix string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case t == durationType:
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
			w.durLines[n.Line] = true
			*w.errs = append(*w.errs, &ConfigError{
				Where: fmt.Sprintf("%s:%d", w.file, n.Line),
				Key:   prefix,
				Msg:   fmt.Sprintf("duration needs a unit: write %q, not %s", n.Value+"s", n.Value),
			})
		}
	case t == reflect.TypeOf(LevelsSpec{}):
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				w.lines[prefix+"."+n.Content[i].Value] = n.Content[i].Line
			}
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "-" {
				continue
			}
			if name == "" {
				name = strings.ToLower(f.Name)
			}
			fields[name] = f.Type
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if prefix != "" {
				key = prefix + "." + k.Value
			}
			w.lines[key] = k.Line
			if ft, ok := fields[k.Value]; ok {
				w.walk(v, ft, key)
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.lines[prefix+"."+n.Content[i].Value] = n.Content[i].Line
		}
	}
}

// UnmarshalYAML decodes a levels list ([1, 2, 4]) or a progression mapping ({start, max,
// factor} or {start, max, step}). A mapping replaces the whole spec.
func (l *LevelsSpec) UnmarshalYAML(n *yaml.Node) error {
	bad := func(line int, format string, args ...any) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: sweep.levels: %s", line, fmt.Sprintf(format, args...))}}
	}
	switch n.Kind {
	case yaml.SequenceNode:
		list := make([]int, 0, len(n.Content))
		var errs []string
		for _, item := range n.Content {
			v, err := strconv.Atoi(item.Value)
			if item.Kind != yaml.ScalarNode || item.Tag != "!!int" || err != nil {
				errs = append(errs, fmt.Sprintf("line %d: sweep.levels: %q is not an integer concurrency", item.Line, item.Value))
				continue
			}
			list = append(list, v)
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		*l = LevelsSpec{List: list}
		return nil
	case yaml.MappingNode:
		var out LevelsSpec
		var errs []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			var err error
			switch k.Value {
			case "start":
				err = v.Decode(&out.Start)
			case "max":
				err = v.Decode(&out.Max)
			case "factor":
				err = v.Decode(&out.Factor)
			case "step":
				err = v.Decode(&out.Step)
			default:
				errs = append(errs, fmt.Sprintf("line %d: sweep.levels: field %s not found (want start, max, factor or step)", k.Line, k.Value))
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("line %d: sweep.levels.%s: %q is not a number", v.Line, k.Value, v.Value))
			}
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		*l = out
		return nil
	default:
		return bad(n.Line, "want a list such as [1, 2, 4] or a mapping such as {start: 1, max: 256, factor: 2}")
	}
}

// MarshalYAML writes the list form when List is set, else the progression mapping.
func (l LevelsSpec) MarshalYAML() (any, error) {
	if len(l.List) > 0 {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, v := range l.List {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)})
		}
		return n, nil
	}
	type prog struct {
		Start  int     `yaml:"start"`
		Max    int     `yaml:"max"`
		Factor float64 `yaml:"factor,omitempty"`
		Step   int     `yaml:"step,omitempty"`
	}
	return prog{Start: l.Start, Max: l.Max, Factor: l.Factor, Step: l.Step}, nil
}

// String formats the spec as it is written in YAML: "[1, 2, 4]", "1..256 ×2" or "8..64 +8".
func (l LevelsSpec) String() string {
	switch {
	case len(l.List) > 0:
		parts := make([]string, len(l.List))
		for i, v := range l.List {
			parts[i] = strconv.Itoa(v)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case l.Step > 0:
		return fmt.Sprintf("%d..%d +%d", l.Start, l.Max, l.Step)
	default:
		return fmt.Sprintf("%d..%d ×%g", l.Start, l.Max, l.Factor)
	}
}

// Expand returns the concurrencies of the plan, strictly increasing.
//
// An explicit list is returned as written (each level must be ≥ 1 and larger than the one
// before). A geometric progression {start, max, factor} gives round(start·factor^k) for
// k = 0, 1, …, dropping values equal to the previous one (factors below 2 round to repeats at
// small concurrencies). A linear progression {start, max, step} gives start + k·step. Both stop
// at max, and max itself is appended when the progression does not land on it, so the sweep
// always reaches the configured ceiling: {start: 1, max: 100, factor: 2} gives
// 1, 2, 4, 8, 16, 32, 64, 100.
func (l LevelsSpec) Expand() ([]int, error) {
	if len(l.List) > 0 {
		if l.Start != 0 || l.Max != 0 || l.Factor != 0 || l.Step != 0 {
			return nil, errors.New("give a list or a progression, not both")
		}
		for i, v := range l.List {
			if v < 1 {
				return nil, fmt.Errorf("level %d is %d: concurrency must be ≥ 1", i+1, v)
			}
			if i > 0 && v <= l.List[i-1] {
				return nil, fmt.Errorf("levels must increase: %d follows %d", v, l.List[i-1])
			}
		}
		return append([]int(nil), l.List...), nil
	}
	switch {
	case l.Start == 0 && l.Max == 0 && l.Factor == 0 && l.Step == 0:
		return nil, errors.New("no levels: give a list such as [1, 2, 4] or {start, max, factor}")
	case l.Start < 1:
		return nil, fmt.Errorf("start is %d: must be ≥ 1", l.Start)
	case l.Max < l.Start:
		return nil, fmt.Errorf("max %d is below start %d", l.Max, l.Start)
	case l.Factor != 0 && l.Step != 0:
		return nil, errors.New("give factor (geometric) or step (linear), not both")
	case l.Step < 0:
		return nil, fmt.Errorf("step is %d: must be > 0", l.Step)
	case l.Step == 0 && !(l.Factor > 1) || math.IsInf(l.Factor, 0):
		return nil, fmt.Errorf("factor is %g: must be > 1 (or give step for a linear progression)", l.Factor)
	}
	var out []int
	add := func(v int) error {
		if len(out) > 0 && v <= out[len(out)-1] {
			return nil
		}
		if len(out) == maxLevels {
			return fmt.Errorf("more than %d levels: raise factor or step, or lower max", maxLevels)
		}
		out = append(out, v)
		return nil
	}
	if l.Step > 0 {
		for v := l.Start; v <= l.Max; v += l.Step {
			if err := add(v); err != nil {
				return nil, err
			}
		}
	} else {
		for k := 0; ; k++ {
			f := float64(l.Start) * math.Pow(l.Factor, float64(k))
			if f > float64(l.Max)+0.5 {
				break
			}
			v := int(math.Round(f))
			if v > l.Max {
				break
			}
			if n := len(out); n > 0 && v <= out[n-1] {
				// A factor close to 1 repeats values for many k: jump to the first k that
				// rounds above the last level, so expansion costs O(levels), not O(max/ln factor).
				next := int(math.Ceil(math.Log((float64(out[n-1])+0.5)/float64(l.Start)) / math.Log(l.Factor)))
				if next > k+1 {
					k = next - 1
				}
				continue
			}
			if err := add(v); err != nil {
				return nil, err
			}
		}
	}
	if err := add(l.Max); err != nil {
		return nil, err
	}
	return out, nil
}

// Validate reports every problem of the configuration at once (errors.Join), one line each,
// naming FILE:LINE when the config was read from a file (or the flag that set the value).
func (c Config) Validate() error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &ConfigError{Where: c.where(key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	badAt := func(key string, at []string, format string, args ...any) {
		errs = append(errs, &ConfigError{Where: c.where(at...), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	positive := func(key string, d time.Duration) {
		if d <= 0 {
			bad(key, "is %v: must be > 0", d)
		}
	}
	nonNegative := func(key string, d time.Duration) {
		if d < 0 {
			bad(key, "is %v: must be ≥ 0", d)
		}
	}
	rate := func(key string, v float64) {
		if !(v >= 0 && v <= 1) {
			bad(key, "is %g: must be in [0, 1]", v)
		}
	}

	if strings.ContainsAny(c.Name, `/\`) || c.Name == "." || c.Name == ".." || strings.ContainsFunc(c.Name, isControl) {
		bad("name", "%q: must not contain path separators or control characters (it names the results directory)", c.Name)
	}

	// target
	t := c.Target
	if t.URL != "" {
		if err := checkURL(t.URL); err != nil {
			bad("target.url", "%v", err)
		}
		if t.Model == "" {
			badAt("target.model", []string{"target.model", "target.url"}, "missing: a model is required when target.url is set")
		}
	}
	if t.API != APIChat && t.API != APICompletions {
		bad("target.api", "%q: must be chat or completions", t.API)
	}
	positive("target.request_timeout", t.RequestTimeout)
	if t.TLS.CAFile != "" {
		if err := readable(t.TLS.CAFile); err != nil {
			bad("target.tls.ca_file", "%v", err)
		}
	}
	if t.URL == "" {
		if _, err := sim.Resolve(c.Simulator); err != nil {
			for _, p := range Problems(err) {
				bad("simulator", "%s", p)
			}
		}
	}

	// workload
	wl := c.Workload
	for _, err := range wl.Validate() {
		msg := err.Error()
		if k, rest, ok := strings.Cut(msg, ": "); ok && namesKey(msg) {
			bad(k, "%s", rest)
		} else {
			bad("workload", "%s", msg)
		}
	}
	if wl.Dataset != "" {
		if err := readable(wl.Dataset); err != nil {
			bad("workload.dataset", "%v", err)
		}
	}

	// sweep
	s := c.Sweep
	if _, err := s.Levels.Expand(); err != nil {
		bad("sweep.levels", "%v", err)
	}
	nonNegative("sweep.warmup", s.Warmup)
	if s.WarmupMax < s.Warmup {
		bad("sweep.warmup_max", "%v is below warmup %v", s.WarmupMax, s.Warmup)
	}
	positive("sweep.duration", s.Duration)
	if s.MinRequests < 0 {
		bad("sweep.min_requests", "is %d: must be ≥ 0", s.MinRequests)
	}
	if s.MaxDuration < s.Duration {
		bad("sweep.max_duration", "%v is below duration %v", s.MaxDuration, s.Duration)
	}
	if !(s.CITarget > 0 && s.CITarget < 1) {
		bad("sweep.ci_target", "is %g: must be in (0, 1)", s.CITarget)
	}
	positive("sweep.drain_timeout", s.DrainTimeout)
	nonNegative("sweep.cooldown", s.Cooldown)
	if s.Refine < 0 {
		bad("sweep.refine", "is %d: must be ≥ 0 (0 = no added levels)", s.Refine)
	}
	rate("sweep.stop.max_error_rate", s.Stop.MaxErrorRate)
	nonNegative("sweep.stop.stop_ttft", s.Stop.StopTTFT)
	nonNegative("sweep.stop.budget", s.Stop.Budget)

	// slo, server metrics, analysis, plan
	nonNegative("slo.ttft_p95", c.SLO.TTFTP95)
	nonNegative("slo.tpot_p95", c.SLO.TPOTP95)
	nonNegative("slo.e2e_p95", c.SLO.E2EP95)
	if c.ServerMetrics.URL != "" {
		if err := checkURL(c.ServerMetrics.URL); err != nil {
			bad("server_metrics.url", "%v", err)
		}
		positive("server_metrics.interval", c.ServerMetrics.Interval)
	} else {
		nonNegative("server_metrics.interval", c.ServerMetrics.Interval)
	}
	if !(c.Analysis.KneeGain > 0 && c.Analysis.KneeGain < 1) {
		bad("analysis.knee_gain", "is %g: must be in (0, 1)", c.Analysis.KneeGain)
	}
	p := c.Plan
	if p.ConcurrentUsers < 0 {
		bad("plan.concurrent_users", "is %d: must be ≥ 0", p.ConcurrentUsers)
	}
	for _, f := range []struct {
		key string
		v   float64
	}{{"plan.qps", p.QPS}, {"plan.output_tps", p.OutputTPS}, {"plan.replica_cost_per_hour", p.ReplicaCostPerHour}} {
		if !(f.v >= 0) || math.IsInf(f.v, 0) {
			bad(f.key, "is %g: must be ≥ 0", f.v)
		}
	}
	if p.GPUsPerReplica < 0 {
		bad("plan.gpus_per_replica", "is %d: must be ≥ 0", p.GPUsPerReplica)
	}
	if strings.ContainsFunc(c.Output.Dir, isControl) {
		bad("output.dir", "%q: must not contain control characters", c.Output.Dir)
	}

	// shard (DESIGN §8)
	if sh := c.Shard; sh.Count < 0 {
		bad("shard.count", "is %d: must be ≥ 0 (0 = not sharded)", sh.Count)
	} else if sh.Count == 0 && (sh.StartAt != "" || sh.Index != 0) {
		badAt("shard.count", []string{"shard.start_at", "shard.index", "shard.count"}, "missing: shard.start_at or shard.index is set, but a sharded sweep also needs its shard count (--shard I/N)")
	} else if sh.Count > 0 {
		if sh.Index < 0 || sh.Index >= sh.Count {
			bad("shard.index", "is %d: must be in [0, %d)", sh.Index, sh.Count)
		}
		if sh.StartAt == "" {
			badAt("shard.start_at", []string{"shard.start_at", "shard.count"}, "missing: the shards start the first level at this agreed time (RFC 3339)")
		} else if _, err := sh.Start(); err != nil {
			bad("shard.start_at", "%q: not an RFC 3339 time such as 2026-11-30T10:00:00Z", sh.StartAt)
		}
		if t.URL == "" {
			badAt("target.url", []string{"target.url", "shard.count"}, "missing: a sharded sweep loads one server from several machines, so it needs target.url (not the built-in simulator)")
		}
		if s.Refine > 0 {
			badAt("sweep.refine", []string{"sweep.refine", "shard.count"}, "is %d: a sharded sweep cannot add levels (where to add them is decided from the merged results, which no shard has); merge, then run one process with the added levels", s.Refine)
		}
		if s.Warmup <= 0 {
			badAt("sweep.warmup", []string{"sweep.warmup", "shard.count"}, "is %v: a sharded sweep needs a warmup > 0 (each window starts at a fixed time after its level)", s.Warmup)
		}
	}
	sortProblems(errs)
	return errors.Join(errs...)
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// checkURL accepts absolute http(s) URLs with a host.
func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// *url.Error quotes the whole URL, userinfo included: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("%q is not a URL: %w", redactURL(raw), err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%q: scheme must be http or https", redactURL(raw))
	}
	if u.Host == "" {
		return fmt.Errorf("%q: no host", redactURL(raw))
	}
	return nil
}

// readable checks that path names a readable regular file.
func readable(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("cannot read: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("cannot read: %w", err)
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	return nil
}

// Redacted returns a copy safe to write to config.yaml: URLs lose their userinfo and
// secret-looking query parameters, and extra_body values under secret-looking keys (api_key,
// authorization, token, secret, password, …) are replaced by "REDACTED", at any depth.
func (c Config) Redacted() Config {
	c.Target.URL = redactURL(c.Target.URL)
	c.ServerMetrics.URL = redactURL(c.ServerMetrics.URL)
	if c.Target.ExtraBody != nil {
		c.Target.ExtraBody = redactValue(c.Target.ExtraBody).(map[string]any)
	}
	if c.Sweep.RecordChunks != nil {
		v := *c.Sweep.RecordChunks
		c.Sweep.RecordChunks = &v
	}
	return c
}

// RedactedValue replaces secret values in config.yaml.
const RedactedValue = "REDACTED"

// redactURL drops userinfo and redacts secret-looking query parameters. A string that does not
// parse is returned with everything before an '@' removed.
func redactURL(raw string) string {
	if raw == "" {
		return raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		if i := strings.LastIndexByte(raw, '@'); i >= 0 {
			return RedactedValue + "@" + raw[i+1:]
		}
		return raw
	}
	u.User = nil
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if SecretKey(k) {
				q.Set(k, RedactedValue)
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// redactValue deep-copies v, redacting values under secret-looking keys.
func redactValue(v any) any { return redactTree(v, SecretKey, nil) }

// redactTree deep-copies v (decoded YAML or JSON): a value under a key secret reports is
// replaced by RedactedValue, and a string elsewhere by str's result (kept when str is nil).
func redactTree(v any, secret func(string) bool, str func(string) any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if secret(k) {
				out[k] = RedactedValue
			} else {
				out[k] = redactTree(e, secret, str)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = redactTree(e, secret, str)
		}
		return out
	case string:
		if str != nil {
			return str(x)
		}
	}
	return v
}

// SecretKey reports whether a key looks like it holds a credential: api_key, apikey,
// authorization, secret, password, passwd, credential, bearer, or a token ("token",
// "auth_token", "x-token", but not "max_tokens" or "stop_token_ids").
func SecretKey(k string) bool {
	k = strings.ToLower(strings.ReplaceAll(k, "-", "_"))
	for _, s := range []string{"api_key", "apikey", "authorization", "secret", "password", "passwd", "credential", "bearer", "cookie"} {
		if strings.Contains(k, s) {
			return true
		}
	}
	return k == "token" || strings.HasSuffix(k, "_token") || strings.HasPrefix(k, "token_") ||
		strings.HasSuffix(k, "accesstoken") || strings.HasSuffix(k, "authtoken")
}
