package main

import "testing"

// TestBadRateInput: each bad value of a rate sweep's flags and keys is exit 2 with one line
// naming the flag (or FILE:LINE) and the problem, and nothing is created (badInput.check).
func TestBadRateInput(t *testing.T) {
	tmp := t.TempDir()
	for _, tt := range []badInput{
		{"--rates not a number", "", []string{"--rates", "1,x"}, []string{`sweep: --rates: "x" is not a rate in requests/s (want a list such as 1,2,4 or auto)`}},
		{"--rates zero", "", []string{"--rates", "0,1"}, []string{"sweep: --rates: sweep.rates: rate 1 is 0: must be > 0 requests/s"}},
		{"--rates decreasing", "", []string{"--rates", "2,1"}, []string{"sweep: --rates: sweep.rates: rates must increase: 1 follows 2"}},
		{"--mode unknown", "", []string{"--mode", "open"}, []string{`sweep: --mode: sweep.mode: "open": must be concurrency or rate`}},
		{"--mode rate without rates", "", []string{"--mode", "rate"}, []string{"sweep: --mode: sweep.rates: missing: a rate sweep needs its offered rates"}},
		{"--rates with --mode concurrency", "", []string{"--mode", "concurrency", "--rates", "1,2"},
			[]string{"sweep: --rates: sweep.rates: [1, 2]: a concurrency sweep takes levels, not rates"}},
		{"--arrival unknown", "", []string{"--rates", "1", "--arrival", "bursty"}, []string{`sweep: --arrival: sweep.arrival: "bursty": must be poisson, gamma or constant`}},
		{"--burstiness without gamma", "", []string{"--rates", "1", "--burstiness", "0.5"},
			[]string{"sweep: --burstiness: sweep.burstiness: is 0.5: only arrival gamma has a burstiness (arrival is poisson)"}},
		{"--burstiness not a number", "", []string{"--burstiness", "x"}, []string{`sweep: --burstiness: "x" is not a number`, "see kneecap sweep -h"}},
		{"--max-concurrency negative", "", []string{"--rates", "1", "--max-concurrency", "-1"},
			[]string{"sweep: --max-concurrency: sweep.max_concurrency: is -1: must be ≥ 1"}},
		{"--max-concurrency past one process", "", []string{"--rates", "1", "--max-concurrency", "200000"},
			[]string{"sweep: --max-concurrency: sweep.max_concurrency: is 200000: must be ≤ 100000, the most requests in flight one process carries"}},
		{"max_concurrency past one process", "sweep:\n  mode: rate\n  rates: [1]\n  max_concurrency: 200000\n", nil,
			[]string{"$CFG:4: sweep.max_concurrency: is 200000: must be ≤ 100000"}},
		{"--from without --rates auto", "", []string{"--rates", "1,2", "--from", tmp}, []string{"sweep: --from: plans the rates of --rates auto: give --rates auto with it"}},
		{"--levels with --rates", "", []string{"--rates", "1,2", "--levels", "1,2"}, []string{"sweep: --levels: a rate sweep offers --rates, not levels of concurrency: give one of them"}},
		{"--arrival on a concurrency sweep", "", []string{"--arrival", "gamma"}, []string{"sweep: --arrival: only an arrival-rate sweep (--rates or --mode rate) takes it"}},
		{"--burstiness on a concurrency sweep", "", []string{"--levels", "1", "--burstiness", "0.5"}, []string{"sweep: --burstiness: only an arrival-rate sweep (--rates or --mode rate) takes it"}},
		{"--max-concurrency on a concurrency sweep", "", []string{"--max-concurrency", "8"}, []string{"sweep: --max-concurrency: only an arrival-rate sweep (--rates or --mode rate) takes it"}},
		{"rate mode without rates", "sweep:\n  mode: rate\n", nil, []string{"$CFG:2: sweep.rates: missing"}},
		{"rates not a list", "sweep:\n  mode: rate\n  rates: fast\n", nil, []string{`$CFG:3: sweep.rates: "fast": want auto, a list`}},
		{"max_unsustainable negative", "sweep:\n  stop: {max_unsustainable: -2}\n", nil, []string{"$CFG:2: sweep.stop.max_unsustainable: is -2: must be ≥ 0"}},
	} {
		t.Run(tt.name, func(t *testing.T) { tt.check(t, tmp) })
	}
}
