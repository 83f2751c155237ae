// Package hftest builds a small tokenizer.json for tests: a ByteLevel BPE (the kind of GPT-2
// and Llama 3) that counts kneecap's synthetic pseudo-words as the simulator's subword rule
// does (simulator.tokenizer: subword, ⌈n ÷ 4⌉ tokens for a word of n bytes). Tests cannot
// download a model's tokenizer; this one is generated, not committed (about 390 kB).
//
// The pseudo-words are two to four syllables of a consonant of "bcdfghjklmnprstvz" and a vowel
// of "aeiou" (workload.Synthetic). The vocabulary has the 256 byte symbols, the 85 syllables, each
// syllable after the space symbol Ġ, each pair of syllables after Ġ, and each pair of
// syllables; the merges build them in that order of priority. A word after a space, " s1s2s3s4"
// (8 bytes), merges to "Ġs1s2" and "s3s4": 2 tokens, ⌈8 ÷ 4⌉; " s1s2s3" gives "Ġs1s2" and
// "s3", 2; " s1s2" gives 1. A first word without its space counts the same when it has at most
// three syllables. Other text (digits, capitals, punctuation) falls apart into byte symbols,
// unlike the simulator.
package hftest

import (
	"encoding/json"
	"os"
)

// Syllables of the pseudo-words (sweep's wordPool).
const (
	consonants = "bcdfghjklmnprstvz"
	vowels     = "aeiou"
)

// byteSymbols is GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others
// are shifted to U+0100 and up (the space becomes Ġ, U+0120).
func byteSymbols() [256]string {
	var s [256]string
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			s[b] = string(rune(b))
		} else {
			s[b] = string(rune(256 + n))
			n++
		}
	}
	return s
}

// SubwordTokenizer returns the tokenizer.json document described in the package comment.
func SubwordTokenizer() ([]byte, error) {
	sym := byteSymbols()
	vocab := map[string]int{}
	add := func(s string) {
		if _, ok := vocab[s]; !ok {
			vocab[s] = len(vocab)
		}
	}
	for _, s := range sym {
		add(s)
	}
	var syl []string
	for _, c := range consonants {
		for _, v := range vowels {
			syl = append(syl, string(c)+string(v))
		}
	}
	sp := sym[' ']
	var merges [][2]string
	merge := func(a, b string) {
		merges = append(merges, [2]string{a, b})
		add(a + b)
	}
	for _, s := range syl {
		merge(s[:1], s[1:])
	}
	for _, s := range syl {
		merge(sp, s)
	}
	for _, a := range syl {
		for _, b := range syl {
			merge(sp+a, b)
		}
	}
	for _, a := range syl {
		for _, b := range syl {
			merge(a, b)
		}
	}
	doc := map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   []any{},
		"normalizer":     nil,
		"pre_tokenizer":  map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},
		"post_processor": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": nil,
			"end_of_word_suffix": nil, "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": merges},
	}
	return json.Marshal(doc)
}

// WriteSubwordTokenizer writes SubwordTokenizer's document to path.
func WriteSubwordTokenizer(path string) error {
	b, err := SubwordTokenizer()
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
