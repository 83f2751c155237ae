package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/kneecap/kneecap/sweep"
)

// maxConfigBytes bounds the size of a configuration file.
const maxConfigBytes = 4 << 20

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

// causeFirst returns the keys where a problem of key whose message msg names other keys is
// placed (where's order): first a key msg names that a flag set while key was not (the flag
// that overrode the file is the cause: --input-tokens 128 makes workload.shared_prefix.tokens
// too long), then key.
func (c *Config) causeFirst(key, msg string) []string {
	if c.src == nil {
		return []string{key}
	}
	if _, ok := c.src.origins[key]; ok {
		return []string{key}
	}
	var named []string
	for k := range c.src.origins {
		if k != key && strings.Contains(msg, k) {
			named = append(named, k)
		}
	}
	slices.Sort(named)
	return append(named, key)
}

func parentKey(k string) string {
	if i := strings.LastIndexByte(k, '.'); i >= 0 {
		return k[:i]
	}
	return ""
}

// Error is one configuration problem: the key path, where it was set (FILE:LINE, a flag,
// or empty), and what is wrong.
type Error struct {
	// Where is "FILE:LINE", "FILE", a flag name such as "--levels", or "".
	Where string
	// Key is the dotted key path, for example "sweep.levels".
	Key string
	// Msg says what is wrong.
	Msg string
}

// Error formats the problem as one line: "WHERE: KEY: MSG".
func (e *Error) Error() string {
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

// Problems splits an error returned by Load, Read or Validate into its one-line
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

// Load reads a YAML configuration file over Default and validates it. Every
// problem is reported at once, one per line, each naming FILE:LINE: the problems of single
// keys that Read finds and Validate's, in file-line order.
func Load(path string) (Config, error) {
	c, err := Read(path)
	if err != nil && !KeyProblems(err) {
		return c, err
	}
	return c, JoinProblems(err, c.Validate())
}

// Read reads a YAML configuration file over Default without validating it (flags
// may still override values; call Validate afterwards). Unknown keys, wrong types and
// durations without a unit are errors naming FILE:LINE; the Config returned with them (see
// KeyProblems) holds every other value of the file, so that Validate can report the rest of
// the problems in the same round.
func Read(path string) (Config, error) {
	c := Default()
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

// parseConfig decodes data (the contents of file) over Default.
func parseConfig(file string, data []byte) (Config, error) {
	c := Default()
	src := &source{file: file, lines: map[string]int{}}
	c.src = src

	root, err := oneDocument(file, data)
	if err != nil {
		return c, err
	}
	if root.Kind == 0 || len(root.Content) == 0 || (root.Content[0].Kind == yaml.ScalarNode && root.Content[0].Tag == "!!null") {
		// A file of comments (or a typo'd path to an empty one) would otherwise run the
		// built-in demo without a word.
		return c, fmt.Errorf("%s: the configuration is empty (no keys, only comments or blank lines): give at least target.url and target.model (see examples/), or leave out -c to run the demo", file)
	}
	doc := root.Content[0]
	if doc.Kind != yaml.MappingNode {
		return c, fmt.Errorf("%s:%d: the configuration must be a mapping of keys", file, doc.Line)
	}

	var errs []error
	durLines := map[int]bool{}
	w := walker{file: file, lines: src.lines, durLines: durLines, errs: &errs, scalars: map[int][]scalarAt{}}
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
			key := lineKeys[n]
			if k, ok := valueKey(w.scalars[n], m[2]); ok {
				key = k // several keys on the line (a flow mapping): the one holding the value
			}
			errs = append(errs, typeProblem(fmt.Sprintf("%s:%d", file, n), key, m[2]))
		}
	}
	if len(errs) == 0 {
		return c, nil
	}
	sortProblems(errs)
	return c, &keyProblems{errs: errs}
}

// unknownFieldRE and intoTypeRE match yaml.v3's messages for an unknown key and for a value of
// the wrong kind.
var (
	unknownFieldRE = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
	intoTypeRE     = regexp.MustCompile(`^(.*cannot unmarshal .* into )(\S+)$`)
)

// typeProblem turns one of yaml.v3's decode messages, at where, into the problem a user reads:
// an unknown key names its full path and the keys its section takes (yaml.v3 names the Go
// type, an implementation detail); a section given a scalar says it wants a mapping. key is
// the deepest key on the line.
func typeProblem(where, key, msg string) *Error {
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		if t, ok := sectionTypes()[m[2]]; ok {
			section := parentKey(key)
			if key == "" || !strings.HasSuffix(key, m[1]) {
				key = m[1]
				if section != "" {
					key = section + "." + m[1]
				}
			}
			takes := "the top level takes "
			if section != "" {
				takes = section + " takes "
			}
			return &Error{Where: where, Key: key, Msg: "unknown key (" + takes + strings.Join(yamlKeys(t), ", ") + ")"}
		}
	}
	if m := intoTypeRE.FindStringSubmatch(msg); m != nil {
		if t, ok := sectionTypes()[m[2]]; ok {
			msg = m[1] + kindName(t)
		}
	}
	if head, goType, ok := strings.Cut(msg, " into "); ok && strings.Contains(head, "cannot unmarshal") {
		switch {
		case strings.HasPrefix(goType, "map["):
			msg = head + " into a mapping of keys" // extra_body, headers: not Go's type name
		case strings.HasPrefix(goType, "[]"):
			msg = head + " into a list"
		case goType == "time.Duration":
			msg = head + " into a duration (a number and its unit: 500ms, 30s, 2m)"
		}
	}
	e := &Error{Where: where, Msg: msg}
	if !namesKey(msg) {
		e.Key = key
	}
	return e
}

// kindName says what a value of type t is written as in YAML.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "a mapping of keys"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Float32, reflect.Float64:
		return "a number"
	default:
		return "an integer"
	}
}

// sectionTypes maps the Go name ("sweep.Protocol", "sim.Tokenizer"), as yaml.v3 prints it, of
// every struct type of a Config and of every named type of its fields declared in kneecap's
// packages (time.Duration keeps its own messages) to the type.
func sectionTypes() map[string]reflect.Type {
	out := map[string]reflect.Type{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if out[t.String()] != nil {
			return
		}
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct {
			walk(t.Elem())
			return
		}
		if t.Kind() != reflect.Struct {
			if t.Name() != "" && strings.HasPrefix(t.PkgPath(), "github.com/kneecap/") {
				out[t.String()] = t
			}
			return
		}
		out[t.String()] = t
		for i := range t.NumField() {
			if f := t.Field(i); f.IsExported() {
				walk(f.Type)
			}
		}
	}
	walk(reflect.TypeOf(Config{}))
	return out
}

// yamlName is the key yaml.v3 decodes field f from: its tag's name, else its name in lower
// case; ok is false for a field it skips (unexported, or tagged "-").
func yamlName(f reflect.StructField) (name string, ok bool) {
	name, _, _ = strings.Cut(f.Tag.Get("yaml"), ",")
	if !f.IsExported() || name == "-" {
		return "", false
	}
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name, true
}

// yamlKeys lists the YAML keys of struct type t in field order.
func yamlKeys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if name, ok := yamlName(t.Field(i)); ok {
			keys = append(keys, name)
		}
	}
	return keys
}

// keyProblems is Read's error for a file that parsed but has problems of single keys:
// unknown keys, wrong types, durations without a unit. Each such key keeps its default.
type keyProblems struct{ errs []error }

func (k *keyProblems) Error() string { return errors.Join(k.errs...).Error() }

func (k *keyProblems) Unwrap() []error { return k.errs }

// KeyProblems reports whether err, returned by Read, lists only problems of single keys
// (unknown keys, wrong types, durations without a unit): the file parsed, and the Config
// returned with err holds every other value. Any other error (unreadable file, YAML syntax,
// a document that is not a mapping) leaves nothing to validate.
func KeyProblems(err error) bool {
	var k *keyProblems
	return errors.As(err, &k)
}

// JoinProblems joins configuration problems (Read's key problems, Validate's; nil
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

// invert maps each line to the deepest key path on it (of keys as deep, the first by name).
func invert(lines map[string]int) map[int]string {
	out := map[int]string{}
	for k, l := range lines {
		cur, ok := out[l]
		if d, dc := strings.Count(k, "."), strings.Count(cur, "."); !ok || d > dc || (d == dc && k < cur) {
			out[l] = k
		}
	}
	return out
}

// sortProblems orders Errors by file line, keeping other errors in place at the end.
func sortProblems(errs []error) {
	line := func(e error) int {
		var ce *Error
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
	// scalars are the keys with a scalar value, by the value's line, in document order.
	scalars map[int][]scalarAt
}

func (w walker) walk(n *yaml.Node, t reflect.Type, prefix string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	switch {
	case isInt(t) && n.Kind == yaml.ScalarNode && n.Tag == "!!float":
		// yaml.v3 truncates a float into an integer key (2.5 becomes 2) without a word.
		if f, err := strconv.ParseFloat(n.Value, 64); err != nil || f != math.Trunc(f) {
			*w.errs = append(*w.errs, &Error{Where: fmt.Sprintf("%s:%d", w.file, n.Line), Key: prefix,
				Msg: fmt.Sprintf("is %s: must be a whole number", n.Value)})
		}
	case t == durationType:
		if n.Kind == yaml.ScalarNode && (n.Tag == "!!int" || n.Tag == "!!float") {
			w.durLines[n.Line] = true
			*w.errs = append(*w.errs, &Error{
				Where: fmt.Sprintf("%s:%d", w.file, n.Line),
				Key:   prefix,
				Msg:   unitProblemAt(n.Value, prefix),
			})
		}
	case t == reflect.TypeOf(sweep.LevelsSpec{}) || t == reflect.TypeOf(sweep.RatesSpec{}):
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				w.lines[prefix+"."+n.Content[i].Value] = n.Content[i].Line
			}
		}
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		for i := 0; i < t.NumField(); i++ {
			if name, ok := yamlName(t.Field(i)); ok {
				fields[name] = t.Field(i).Type
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			key := k.Value
			if prefix != "" {
				key = prefix + "." + k.Value
			}
			w.lines[key] = k.Line
			if v.Kind == yaml.ScalarNode {
				w.scalars[v.Line] = append(w.scalars[v.Line], scalarAt{key, v.Value})
			}
			if ft, ok := fields[k.Value]; ok {
				w.walk(v, ft, key)
			}
		}
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && n.Kind == yaml.SequenceNode:
		for i, item := range n.Content {
			key := fmt.Sprintf("%s[%d]", prefix, i)
			w.lines[key] = item.Line
			w.walk(item, t.Elem(), key)
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			w.lines[prefix+"."+n.Content[i].Value] = n.Content[i].Line
		}
	}
}
