// Package workload is what a sweep sends (DESIGN §3.5, §3.6): the requests of synthetic
// workloads (length distributions, shared prefixes), datasets (ShareGPT, prompt files),
// multi-turn sessions and trace replay (Mooncake, BurstGPT, Azure formats, their windows and
// time scales), and the sizing of their prompts in the server's tokens (a tokenizer file, the
// server's tokenize endpoint, or usage calibration). A Workload is deterministic in (seed,
// level, worker, seq): the load generator asks it for each request.
package workload
