package sim

import (
	"context"
	"math"
	"unicode"
)

// Tokenizer names the simulator's token rule (Config.Tokenizer). One rule counts a request's
// prompt everywhere: usage.prompt_tokens, POST /tokenize, the max_model_len check, the KV
// cache and prefill time.
type Tokenizer string

const (
	// tokenizerWords counts one token per whitespace-separated word (countTokens).
	tokenizerWords Tokenizer = "words"
	// TokenizerSubword counts ⌈n ÷ 4⌉ tokens for a whitespace-separated word of n bytes
	// (countSubwordTokens), as a sub-word tokenizer splits long words into pieces.
	TokenizerSubword Tokenizer = "subword"
)

// subwordBytes is the length in bytes of one sub-word piece.
const subwordBytes = 4

// tokenizers lists the accepted Tokenizer names.
func tokenizers() []Tokenizer { return []Tokenizer{tokenizerWords, TokenizerSubword} }

// Count returns the number of tokens in text under rule t; an unknown or empty rule counts as
// tokenizerWords.
func (t Tokenizer) Count(text string) int {
	if t == TokenizerSubword {
		return countSubwordTokens(text)
	}
	return countTokens(text)
}

// TokenCounter counts a text's tokens as the simulator counts a chat request whose one
// message is that text: Tokenizer's count of the text plus TemplateTokens, the count
// Config.promptTokens gives (usage.prompt_tokens, POST /tokenize) when Config.Tokenizer is
// Tokenizer and Config.ChatTemplateTokens is TemplateTokens. TemplateTokens 0 counts a
// completion's prompt. Its method set is workload.TokenCounter's, so tests size prompts in
// the simulator's tokens with it; it is safe for concurrent use.
type TokenCounter struct {
	// Tokenizer is the token rule (Config.Tokenizer).
	Tokenizer Tokenizer
	// TemplateTokens is what the chat template adds, in tokens (Config.ChatTemplateTokens).
	TemplateTokens int
}

// Count returns the tokens of a chat request whose one message is text.
func (c TokenCounter) Count(text string) int { return c.TemplateTokens + c.Tokenizer.Count(text) }

// CountTokens returns Count(text) and no error.
func (c TokenCounter) CountTokens(_ context.Context, text string) (int, error) {
	return c.Count(text), nil
}

// countTokens is the simulator's words rule: one token per whitespace-separated word
// (strings.Fields), counted without allocating.
func countTokens(text string) int {
	n := 0
	inWord := false
	for _, r := range text {
		if unicode.IsSpace(r) {
			inWord = false
			continue
		}
		if !inWord {
			n++
			inWord = true
		}
	}
	return n
}

// countSubwordTokens is the simulator's subword rule: a whitespace-separated word
// (strings.Fields) of n bytes counts ⌈n ÷ 4⌉ tokens, counted without allocating. kneecap's
// synthetic pseudo-words of 4–8 bytes count 1 or 2 tokens each; an output token's text "tok "
// counts 1.
func countSubwordTokens(text string) int {
	n := 0
	eachWord(text, func(w string) { n += (len(w) + subwordBytes - 1) / subwordBytes })
	return n
}

// eachWord calls fn with every whitespace-separated word of text, as strings.Fields splits it.
func eachWord(text string, fn func(string)) {
	start := -1
	for i, r := range text {
		if unicode.IsSpace(r) {
			if start >= 0 {
				fn(text[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		fn(text[start:])
	}
}

// vocabSize bounds the token ids that POST /tokenize reports (about Llama 3's vocabulary).
const vocabSize = 1 << 17

// appendIDs appends the token ids of text under rule t: one id per token, the FNV-1a hash of
// the token's text (the word, or the word's 4-byte piece) modulo vocabSize. len(ids added)
// is t.Count(text).
func (t Tokenizer) appendIDs(ids []int, text string) []int {
	eachWord(text, func(w string) {
		if t != TokenizerSubword {
			ids = append(ids, tokenID(w))
			return
		}
		for len(w) > 0 {
			k := min(len(w), subwordBytes)
			ids = append(ids, tokenID(w[:k]))
			w = w[k:]
		}
	})
	return ids
}

// tokenID is the FNV-1a hash (32 bits) of a token's text modulo vocabSize.
func tokenID(text string) int {
	h := uint32(2166136261)
	for i := 0; i < len(text); i++ {
		h ^= uint32(text[i])
		h *= 16777619
	}
	return int(h % vocabSize)
}

// Salts separate the random streams drawn for one request.
const (
	saltLength     uint64 = 0x6c656e67 // "leng"
	saltError      uint64 = 0x6572726f // "erro"
	saltDisconnect uint64 = 0x64697363 // "disc"
	saltStall      uint64 = 0x7374616c // "stal"
	saltWhere      uint64 = 0x77686572 // "wher"
)

// uniform is a deterministic uniform draw in [0, 1) from (seed, request sequence, salt):
// SplitMix64 (Steele, Lea and Flood 2014) over the mixed inputs.
func uniform(seed int64, seq, salt uint64) float64 {
	x := mix64(uint64(seed)*0x9e3779b97f4a7c15 ^ seq*0xbf58476d1ce4e5b9 ^ salt*0x94d049bb133111eb)
	return float64(x>>11) / (1 << 53)
}

// mix64 is one SplitMix64 step: x advanced by the golden-ratio increment, then finalised.
func mix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ x>>31
}

// outputLength draws the natural output length (before max_tokens) of request seq: exactly
// mean for outputFixed; for OutputGeometric the number of tokens until an end-of-sequence
// token that appears after each token with probability p = 1/mean, so P(n) = (1−p)^(n−1)·p,
// n ≥ 1, with mean 1/p = mean (inverse-CDF draw n = ⌈ln U ÷ ln(1−p)⌉).
func outputLength(dist string, mean int, seed int64, seq uint64) int {
	if dist != OutputGeometric || mean <= 1 {
		return max(mean, 1)
	}
	p := 1 / float64(mean)
	u := 1 - uniform(seed, seq, saltLength) // (0, 1]
	n := math.Ceil(math.Log(u) / math.Log1p(-p))
	if n < 1 || math.IsNaN(n) {
		return 1
	}
	if n > 1<<30 {
		return 1 << 30
	}
	return int(n)
}
