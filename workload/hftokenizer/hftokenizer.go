// Package hftokenizer counts tokens with a Hugging Face tokenizer.json (workload.tokenizer,
// DESIGN §3.6) for the prompt sizing, offline: for exactness without a tokenize endpoint and
// for APIs that report no usage. The file is read by github.com/sugarme/tokenizer, a pure-Go
// port of Hugging Face's tokenizers (BPE with ByteLevel or Metaspace pre-tokenizers,
// WordPiece, Unigram, WordLevel), the only importer of that library.
//
// Before handing the file over, Load adapts what Go's regexp (RE2) cannot compile: the
// lookahead \s+(?!\S) that GPT-2-style split patterns (GPT-2, Llama 3, Qwen, DeepSeek) end
// with becomes \s+ (the same pieces for single-spaced text such as kneecap's prompts; a run
// of spaces before a word keeps its last space apart), and the decoder, truncation and
// padding, which counting does not use, are dropped. The library panics on some malformed
// files, and those panics become errors; it also calls log.Fatal on a few others (an added
// token it cannot place, a normalizer pattern it cannot compile), which end the process: the
// file is read before anything is sent, so such a file costs no measurement.
//
// Encoding is slow (the library compiles its ByteLevel pattern once per pre-token: about
// 20 ms for 300 words with a Llama 3 pre-tokenizer), so the sizing counts with it before the
// first level only, never per request.
package hftokenizer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"

	"github.com/sugarme/tokenizer"
	"github.com/sugarme/tokenizer/pretrained"
)

// maxFileBytes bounds a tokenizer.json (Gemma 3's is 33 MB).
const maxFileBytes = 256 << 20

// Tokenizer counts tokens with a tokenizer.json. It implements workload.TokenCounter and is safe
// for concurrent use (encodings are serialized).
type Tokenizer struct {
	path string
	// Dropped names the parts of the file left out because the library could not build
	// them ("post_processor": special tokens such as BOS are then not counted).
	Dropped []string

	mu sync.Mutex
	tk *tokenizer.Tokenizer
}

// Load reads the tokenizer.json at path. A file that cannot be read, is not a tokenizer.json,
// or whose model or pre-tokenizer the library cannot build is an error naming the file.
func Load(path string) (*Tokenizer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if len(data) > maxFileBytes {
		return nil, fmt.Errorf("tokenizer: %s: larger than %d bytes", path, maxFileBytes)
	}
	return load(path, data)
}

// load builds the tokenizer of data, the content of the file at path (which names it in
// errors).
func load(path string, data []byte) (*Tokenizer, error) {
	t := &Tokenizer{path: path}
	doc, err := adapt(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if t.tk, err = build(doc); err != nil {
		// The post-processor only adds special tokens, which the sizing measures from the
		// server's usage anyway: a file whose post-processor the library lacks still counts.
		if _, ok := doc["post_processor"]; !ok || doc["post_processor"] == nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
		doc["post_processor"] = nil
		tk, err2 := build(doc)
		if err2 != nil {
			return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
		}
		t.tk, t.Dropped = tk, []string{"post_processor"}
	}
	if n, err := t.CountTokens(context.Background(), "hello world"); err != nil || n == 0 {
		return nil, fmt.Errorf("tokenizer: %s: counts %d tokens in %q (%v): not a usable tokenizer", path, n, "hello world", err)
	}
	return t, nil
}

// Path returns the file the tokenizer was read from.
func (t *Tokenizer) Path() string { return t.path }

// CountTokens returns the number of tokens of text, special tokens (BOS) included as the
// file's post-processor adds them.
func (t *Tokenizer) CountTokens(_ context.Context, text string) (n int, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	defer func() {
		if r := recover(); r != nil {
			n, err = 0, fmt.Errorf("tokenizer: %s: encode: %v", t.path, r)
		}
	}()
	en, err := t.tk.EncodeSingle(text, true)
	if err != nil {
		return 0, fmt.Errorf("tokenizer: %s: encode: %w", t.path, err)
	}
	return len(en.Ids), nil
}

// build runs the library on doc, turning its panics into errors.
func build(doc map[string]any) (tk *tokenizer.Tokenizer, err error) {
	defer func() {
		if r := recover(); r != nil {
			tk, err = nil, fmt.Errorf("unsupported content: %v", r)
		}
	}()
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return pretrained.FromReader(bytes.NewReader(b))
}

// lookahead is the ending of GPT-2-style split patterns that RE2 cannot compile, and what
// replaces it.
var lookahead = strings.NewReplacer(`\s+(?!\S)|\s+`, `\s+`, `\s+(?!\S)`, `\s+`)

// adapt decodes a tokenizer.json and adapts it for the library (see the package comment).
func adapt(data []byte) (map[string]any, error) {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not a tokenizer.json: %w", err)
	}
	model, ok := doc["model"].(map[string]any)
	if !ok {
		return nil, errors.New(`not a tokenizer.json: no "model"`)
	}
	if _, ok := model["type"].(string); !ok {
		return nil, errors.New(`not a tokenizer.json: "model" has no "type"`)
	}
	for _, k := range []string{"decoder", "truncation", "padding"} {
		doc[k] = nil
	}
	for _, k := range []string{"normalizer", "pre_tokenizer"} {
		if err := adaptPatterns(doc[k]); err != nil {
			return nil, fmt.Errorf("%s: %w", k, err)
		}
	}
	return doc, nil
}

// adaptPatterns rewrites the regular expressions of every Split and Replace step under v.
func adaptPatterns(v any) error {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			if err := adaptPatterns(e); err != nil {
				return err
			}
		}
	case map[string]any:
		if p, ok := x["pattern"].(map[string]any); ok {
			if re, ok := p["Regex"].(string); ok {
				re = lookahead.Replace(re)
				if _, err := regexp.Compile(re); err != nil {
					return fmt.Errorf("%s pattern %q: Go's regexp cannot compile it: %w", x["type"], re, err)
				}
				p["Regex"] = re
			}
		}
		for k, e := range x {
			if k != "pattern" {
				if err := adaptPatterns(e); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
