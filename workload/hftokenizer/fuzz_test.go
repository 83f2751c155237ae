package hftokenizer

import (
	"context"
	"strings"
	"testing"
)

// tinyTokenizers are small tokenizer.json files of each model kind the library builds, with
// normalizers, pre-tokenizers, a post-processor and added tokens: seeds FuzzLoad mutates.
var tinyTokenizers = []string{
	`{"model":{"type":"BPE","vocab":{"h":0,"e":1,"l":2,"o":3,"he":4,"ll":5,"Ġ":6,"w":7,"r":8,"d":9},"merges":["h e","l l"]},` +
		`"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":false,"trim_offsets":true,"use_regex":true},` +
		`"added_tokens":[{"id":10,"content":"<s>","single_word":false,"lstrip":false,"rstrip":false,"normalized":false,"special":true}],` +
		`"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},{"Sequence":{"id":"A","type_id":0}}],"pair":[],"special_tokens":{"<s>":{"id":"<s>","ids":[10],"tokens":["<s>"]}}}}`,
	`{"model":{"type":"WordPiece","unk_token":"[UNK]","continuing_subword_prefix":"##","max_input_chars_per_word":100,"vocab":{"[UNK]":0,"hello":1,"world":2,"##s":3}},` +
		`"normalizer":{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true},` +
		`"pre_tokenizer":{"type":"BertPreTokenizer"}}`,
	`{"model":{"type":"WordLevel","vocab":{"[UNK]":0,"hello":1,"world":2},"unk_token":"[UNK]"},"pre_tokenizer":{"type":"Whitespace"}}`,
	`{"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["▁hello",-1],["▁world",-2],["▁",-3],["h",-4]]},` +
		`"normalizer":{"type":"Sequence","normalizers":[{"type":"Replace","pattern":{"String":" "},"content":"▁"}]},` +
		`"pre_tokenizer":{"type":"Metaspace","replacement":"▁","add_prefix_space":true}}`,
	`{"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\s+(?!\\S)|\\s+"},"behavior":"Isolated","invert":false}}`,
	`{"version":"1.0"}`,
	`not json`,
}

// FuzzLoad: whatever a tokenizer.json holds, loading it and counting with it never crashes
// kneecap: a file the library cannot build is an error naming the file (its panics recovered),
// and a file that loads counts any text without panicking.
func FuzzLoad(f *testing.F) {
	for _, s := range tinyTokenizers {
		f.Add([]byte(s), "hello world")
	}
	const name = "fuzz-tokenizer.json"
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		tk, err := load(name, data)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		n, err := tk.CountTokens(context.Background(), text)
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Fatalf("count error %q does not name the file", err)
		}
		if n < 0 {
			t.Fatalf("%d tokens", n)
		}
	})
}
