// Command tracegen writes a small synthetic Mooncake-format trace (DESIGN §3.9): one JSON
// object a line, {"timestamp": ms, "input_length": N, "output_length": M, "hash_ids": [...]},
// seeded, so the same flags always give the same file. examples/trace-mooncake.jsonl is
//
//	go run ./examples/tracegen > examples/trace-mooncake.jsonl
//
// Arrivals are bursty: a Poisson process whose rate alternates between -rate × 1.8 for 5 s
// and -rate × 0.2 for 5 s (mean -rate), over -duration. Prompts are lognormal (mean 700
// tokens, σ 0.6 of the log, 64 … 4,096), outputs lognormal (mean 90, σ 0.7, 8 … 512). The
// prompt's blocks of -block tokens are hash_ids: with probability 0.7 a request starts with
// one of -prefixes shared system prompts of 1–2 blocks (ids 0 … 2·prefixes−1), the rest of
// its blocks new ids, as in Mooncake's traces (a block id seen before is the same text).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
)

func main() {
	seed := flag.Uint64("seed", 15, "PCG seed")
	rate := flag.Float64("rate", 8, "mean arrival rate in requests/s")
	duration := flag.Float64("duration", 60, "trace length in seconds")
	block := flag.Int("block", 512, "tokens of one hash_ids block")
	prefixes := flag.Int("prefixes", 4, "shared system prompts")
	flag.Parse()
	if err := write(os.Stdout, *seed, *rate, *duration, *block, *prefixes); err != nil {
		fmt.Fprintln(os.Stderr, "tracegen:", err)
		os.Exit(1)
	}
}

// write writes the trace to f.
func write(f *os.File, seed uint64, rate, duration float64, block, prefixes int) error {
	r := rand.New(rand.NewPCG(seed, 0x7472616365))
	w := bufio.NewWriter(f)
	next := int64(2 * prefixes) // the first id not used by a shared prefix
	lognormal := func(mean, sigma, lo, hi float64) int {
		v := math.Exp(math.Log(mean) - sigma*sigma/2 + sigma*r.NormFloat64())
		return int(math.Round(math.Min(math.Max(v, lo), hi)))
	}
	for t := 0.0; ; {
		phase := 1.8
		if int(t/5)%2 == 1 {
			phase = 0.2
		}
		t += r.ExpFloat64() / (rate * phase)
		if t >= duration {
			break
		}
		in := lognormal(700, 0.6, 64, 4096)
		out := lognormal(90, 0.7, 8, 512)
		blocks := (in + block - 1) / block
		ids := make([]int64, 0, blocks)
		if r.Float64() < 0.7 {
			p := int64(r.IntN(prefixes))
			ids = append(ids, 2*p)
			if p%2 == 1 && blocks > 1 { // odd prefixes are two blocks long
				ids = append(ids, 2*p+1)
			}
		}
		for len(ids) < blocks {
			ids = append(ids, next)
			next++
		}
		fmt.Fprintf(w, `{"timestamp": %d, "input_length": %d, "output_length": %d, "hash_ids": [`, int64(math.Round(t*1000)), in, out)
		for i, id := range ids {
			if i > 0 {
				w.WriteString(", ")
			}
			fmt.Fprint(w, id)
		}
		w.WriteString("]}\n")
	}
	return w.Flush()
}
