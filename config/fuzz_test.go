package config

import (
	"strings"
	"testing"
)

// FuzzConfigValidate decodes arbitrary YAML and validates what decoded: neither panics, every
// problem is one line, and every problem of a config read from a file names that file
// (FuzzParseConfig in load_test.go covers the decoder alone).
func FuzzConfigValidate(f *testing.F) {
	for _, s := range []string{
		"sweep: {levels: [4, 2], warmup: -1s, warmup_max: 1s}\n",
		"target: {url: 'http://u:p@h/v1?api_key=x', tls: {ca_file: /nonexistent}}\n",
		"workload: {input_tokens: {dist: uniform, min: 5, max: 1}, output_tokens: {dist: lognormal, mean: 10}}\n",
		"sweep: {levels: {start: 1, max: 1000000, factor: 1.0000001}}\n",
		"simulator: {max_num_seqs: -1, faults: {error_rate: 2}}\nname: ../x\n",
		"slo: {ttft_p95: 1h}\nplan: {qps: .nan, replica_cost_per_hour: -1}\n",
		"plan: {energy_cost_per_kwh: .nan}\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := parseConfig("f.yaml", []byte(s))
		if err != nil {
			return
		}
		err = c.Validate()
		for _, p := range Problems(err) {
			if !strings.HasPrefix(p, "f.yaml") {
				t.Errorf("problem does not name the file: %q", p)
			}
		}
		_ = c.Redacted()
	})
}
