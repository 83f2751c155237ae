package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"
)

// The YAML of a configuration file as a user writes it: one document of UTF-8, syntax errors at
// their 1-based line, and a type error blamed on the key whose value it quotes.

// oneDocument parses data (the contents of file) as one YAML document: a file that is not
// UTF-8 is refused at the line and column of its first bad byte (yaml.v3 names neither), and a
// second document ("---") at its line, since kneecap reads one configuration per file and
// would otherwise ignore the rest.
func oneDocument(file string, data []byte) (yaml.Node, error) {
	var root yaml.Node
	if !utf8.Valid(data) {
		i := 0
		for i < len(data) {
			r, n := utf8.DecodeRune(data[i:])
			if r == utf8.RuneError && n == 1 {
				break
			}
			i += n
		}
		line := 1 + bytes.Count(data[:i], []byte("\n"))
		col := 1 + utf8.RuneCount(data[bytes.LastIndexByte(data[:i], '\n')+1:i])
		return root, fmt.Errorf("%s:%d: byte 0x%02x at column %d is not UTF-8: save the file as UTF-8", file, line, data[i], col)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil && !errors.Is(err, io.EOF) {
		return root, yamlProblem(file, data, err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		line := next.Line
		if len(next.Content) > 0 {
			line = next.Content[0].Line
		}
		return root, fmt.Errorf("%s:%d: a second YAML document (after a \"---\" line): a configuration file holds one; split it into two files", file, line)
	case !errors.Is(err, io.EOF):
		return root, yamlProblem(file, data, err)
	}
	return root, nil
}

// yamlProblem is a yaml.v3 syntax error at FILE:LINE, like every other problem. yaml.v3 gives
// a parser's error (parserHints) the 0-based line of the construct it was in, or of the
// problem, where a scanner's gets the 1-based one (yaml.v3 yaml.go, parser.fail): the line is
// made 1-based, and the message says what the parser missed in the file's words.
func yamlProblem(file string, data []byte, err error) error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	m := lineRE.FindStringSubmatch(msg)
	if m == nil {
		return fmt.Errorf("%s: %s", file, msg)
	}
	line, text := m[1], m[2]
	if hint, ok := parserHints[text]; ok {
		n, _ := strconv.Atoi(line)
		last := bytes.Count(bytes.TrimRight(data, "\n"), []byte("\n")) + 1 // the file's last line
		line, text = strconv.Itoa(min(n+1, last)), text+": "+hint
	}
	return fmt.Errorf("%s:%s: %s", file, line, text)
}

// parserHints are yaml.v3's parser errors (parserc.go) and what they mean in a file.
var parserHints = map[string]string{
	"did not find expected ',' or '}'":    "a {…} mapping from here on is not closed, or an item lacks its comma",
	"did not find expected ',' or ']'":    "a […] list from here on is not closed, or an item lacks its comma",
	"did not find expected key":           "a key from here on is indented less or more than the keys beside it",
	"did not find expected '-' indicator": "an item of the list from here on is not indented like the others",
	"did not find expected node content":  "a value is missing from here on",
}

// isInt reports whether t is an integer kind other than time.Duration (its own rule).
func isInt(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return t != durationType
	}
	return false
}

// scalarAt is a key and its scalar value, as written.
type scalarAt struct{ key, value string }

// valueRE matches the value yaml.v3 quotes in a decode message: the whole value, or its first
// 7 bytes and "..." when it is longer than 10 (yaml.v3 decode.go, terror).
var valueRE = regexp.MustCompile("`([^`]*)`")

// valueKey is the key among keys (those of one line) whose value the decode message msg
// quotes: the first in document order, so that a flow mapping such as `target: {url: …,
// request_timeout: abc}` names the key that is wrong on every run.
func valueKey(keys []scalarAt, msg string) (string, bool) {
	m := valueRE.FindStringSubmatch(msg)
	if m == nil {
		return "", false
	}
	want, cut := strings.CutSuffix(m[1], "...")
	for _, k := range keys {
		if k.value == want || (cut && len(k.value) > 10 && strings.HasPrefix(k.value, want)) {
			return k.key, true
		}
	}
	return "", false
}
