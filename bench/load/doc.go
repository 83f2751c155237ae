// Command load is kneecap's end-to-end load benchmark: it shows that the client is never the
// bottleneck (issue 7).
//
// It starts `kneecap sim --profile fixed` as a separate process (the simulator serves every
// request with a fixed TTFT, then one token every ITL), then runs kneecap's own level runner
// (sweep.Run with the real go-openai client of sweep/openai) in this process at each level
// (default 256, 1,024, 4,096 and 8,192 concurrent streams), and prints per level:
//
//   - client CPU per streamed token: getrusage(RUSAGE_SELF) user+system time over the
//     measurement window [W0, W1), minus the CPU time of the benchmark's own sampler (its
//     goroutine is locked to an OS thread read with getrusage(RUSAGE_THREAD)), ÷ tokens whose
//     chunk arrived in the same window. The simulator runs in another process, so this is
//     the client's cost alone (HTTP, SSE and JSON decoding, timing, record keeping, the level
//     controller and the Go runtime);
//   - peak RSS per in-flight stream: (max VmRSS during the level − VmRSS before the first
//     level) ÷ streams, sampled from /proc/self/status every 20 ms, and the same deltas of Go
//     heap objects, goroutine stacks and goroutines (runtime/metrics);
//   - the measurement error of TTFT p50 and TPOT p50 (analysis.Summarize over the window)
//     against the simulator's configured TTFT and ITL;
//   - achieved concurrency, output tokens/s against the closed-loop ideal, the client's own
//     diagnosis (LevelRun.Client) and the simulator process's CPU, so that a level where the
//     simulator rather than the client ran out of CPU is visible.
//
// Then it runs the same levels with the floor client (floor.go, -floor=false skips it): raw
// HTTP/1.1, a 1 KiB buffer per connection, no JSON decoding. Its CPU per token is the floor
// any Go client pays on this machine (read system calls and goroutine wake-ups), so the
// difference is the kneecap client's own cost.
//
// Targets (on a 2-core machine): TTFT and TPOT p50 within 3% + 1 ms of the configured values
// at 1,024 streams; ≤ 10 µs of client CPU per token (10 ms per 1,000); ≤ 64 KiB per stream;
// every level sustained (achieved concurrency ≥ 95% of target, no errors). The command exits
// with status 1 when a target is missed.
//
// Usage (from the module root; `make bench` runs it after the Go benchmarks):
//
//	go run ./bench/load [-kneecap bin/kneecap] [-levels 256,1024,4096,8192] [-ttft 500ms] [-itl 100ms]
//	    [-output-tokens 32] [-warmup 2s] [-duration 6s] [-floor=false]
//	    [-cpuprofile cpu.prof] [-memprofile heap.prof]
//
// -memprofile writes a heap profile during the measurement window of the largest level, with
// every stream in flight, sampling every 4 KiB allocated (so a profiled run's CPU figures are
// not the benchmark's).
//
// Without -kneecap it builds ./cmd/kneecap into a temporary directory. The number of tokens
// per second is streams ÷ ITL (40,960/s at 4,096 streams and 100 ms); up to 4,096 streams the
// defaults keep the simulator process well below a core so that the figures describe the
// client. The last level, 8,192 streams (81,920 tokens/s), is past what the client and the
// simulator together get from two cores: there the client falls behind, and the benchmark
// checks that the read-lag verdict refuses the level (issue 17).
package main
