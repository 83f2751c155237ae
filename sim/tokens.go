package sim

import (
	"math"
	"unicode"
)

// CountTokens is the simulator's prompt-token rule: one token per whitespace-separated word
// (strings.Fields), counted without allocating. Chat requests count the words of every
// message's content; there is no chat-template overhead.
func CountTokens(text string) int {
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
	x := uint64(seed)*0x9e3779b97f4a7c15 ^ seq*0xbf58476d1ce4e5b9 ^ salt*0x94d049bb133111eb
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / (1 << 53)
}

// outputLength draws the natural output length (before max_tokens) of request seq: exactly
// mean for OutputFixed; for OutputGeometric the number of tokens until an end-of-sequence
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
