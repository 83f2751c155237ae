//go:build unix

package sweep_test

import (
	"context"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep"
)

// BenchmarkRateLevel (issue 14, item 8; `make bench`, not `make test`) runs one Poisson rate
// level — 1 s warmup, 5 s window — at 500 and 1,000 arrivals/s against the fixed simulator,
// in process, on loopback: 8 tokens a request, TTFT 500 ms and 500 ms between tokens, E2E
// 4 s, so up to about 4,000 requests in flight at 1,000/s under the default cap of 4,096. It
// reports the schedule lag (Sent − Scheduled) p50, p99 and max of the requests sent, the p99
// of the lag less the connection wait (ConnWait: the dial of a new connection, which every
// request of the rising in-flight count needs: the dispatcher's own lateness), and the
// process's CPU time per request (client and simulator together: the simulator runs in this
// process). The goal (docs/performance.md): lag p99 ≤ 1 ms at 500/s on the 2-core machine.
func BenchmarkRateLevel(b *testing.B) {
	for _, rps := range []float64{500, 1000} {
		b.Run(time.Duration(float64(time.Second)/rps).String()+"-gap", func(b *testing.B) {
			url, _ := startSim(b, sim.Config{Profile: sim.ProfileFixed, TTFT: 500 * time.Millisecond, ITL: 500 * time.Millisecond})
			client := newClient(b, url, sweep.DefaultMaxConcurrency)
			proto := sweep.Protocol{Warmup: time.Second, WarmupMax: 10 * time.Second, Duration: 5 * time.Second,
				MaxDuration: 5 * time.Second, MinRequests: 1, CITarget: 1, DrainTimeout: 10 * time.Second}
			plan := sweep.Plan{Rates: []float64{rps}, Arrival: sweep.Arrival{Seed: 1}, Protocol: proto, Workload: fixedWorkload{out: 8}}
			for b.Loop() {
				cpu0 := cpuTime()
				sink := &memSink{}
				if _, err := sweep.Run(context.Background(), context.Background(), plan, client, sink); err != nil {
					b.Fatal(err)
				}
				cpu := cpuTime() - cpu0
				var lags, late []float64 // late: the lag less the connection wait (dial)
				for _, r := range sink.records[0] {
					if r.Worker >= 0 {
						lags = append(lags, float64(r.Lag())/1e3)
						late = append(late, float64(r.Lag()-r.ConnWait)/1e3)
					}
				}
				slices.Sort(lags)
				slices.Sort(late)
				b.ReportMetric(record.Percentile(late, 99), "late-p99-µs")
				b.ReportMetric(record.Percentile(lags, 50), "lag-p50-µs")
				b.ReportMetric(record.Percentile(lags, 99), "lag-p99-µs")
				b.ReportMetric(lags[len(lags)-1], "lag-max-µs")
				b.ReportMetric(float64(cpu.Microseconds())/float64(len(lags)), "cpu-µs/req")
				b.ReportMetric(float64(len(lags)), "requests")
			}
		})
	}
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
