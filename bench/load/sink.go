package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// What the benchmark keeps of each level: its figures (row), computed as the level finishes
// (benchSink), and the heap profile of the largest level (heapProfiler).

// row is the figures of one level.
type row struct {
	streams        int
	achieved       float64
	tps, idealTPS  float64
	tokens         float64
	window         time.Duration
	cpu            time.Duration // client CPU over the window: process CPU − the sampler's
	benchCPU       time.Duration // the sampler's own CPU over the window (excluded from cpu)
	simUtil        float64       // simulator CPU ÷ (window × cores)
	rssPerStream   float64       // bytes
	heapPerStream  float64       // bytes of Go heap objects at peak − before the sweep, ÷ streams
	stackPerStream float64       // bytes of goroutine stacks at peak − before the sweep, ÷ streams
	gPerStream     float64       // goroutines at peak − before the sweep, ÷ streams
	ttft, tpot     float64       // p50, ms
	errs, requests int
	steady         bool
	client         *record.ClientStats
}

// cpuPerToken is the client CPU time per streamed token.
func (r row) cpuPerToken() time.Duration { return perToken(r.cpu, r.tokens) }

func perToken(d time.Duration, tokens float64) time.Duration {
	if tokens <= 0 {
		return 0
	}
	return time.Duration(float64(d) / tokens)
}

// benchSink computes each level's figures as it finishes and keeps no records.
type benchSink struct {
	cfg    config
	smp    *sampler
	base   sample
	stderr io.Writer
	label  string
	rows   []row
	err    error
}

func (b *benchSink) LevelDone(l record.Level) error {
	run := l.Run
	lv := analysis.Summarize([]record.Level{l}, analysis.DefaultOptions())[0]
	sp, err := b.smp.between(run.W0, run.W1, run.WarmupStart, run.DrainEnd)
	if err != nil {
		return err
	}
	win := run.Window()
	c := float64(run.Concurrency)
	r := row{
		streams:        run.Concurrency,
		achieved:       float64(lv.AchievedConcurrency),
		tps:            float64(lv.OutputTPS),
		idealTPS:       b.cfg.idealTPS(run.Concurrency),
		tokens:         float64(lv.OutputTPS) * win.Seconds(),
		window:         win,
		cpu:            sp.cpu - sp.benchCPU,
		benchCPU:       sp.benchCPU,
		simUtil:        float64(sp.simCPU) / (float64(win) * float64(runtime.NumCPU())),
		rssPerStream:   float64(sp.peakRSS-b.base.rss) / c,
		heapPerStream:  float64(sp.peakMem.heap-b.base.mem.heap) / c,
		stackPerStream: float64(sp.peakMem.stacks-b.base.mem.stacks) / c,
		gPerStream:     float64(sp.peakMem.goroutines-b.base.mem.goroutines) / c,
		ttft:           float64(lv.TTFT.P50),
		tpot:           float64(lv.TPOT.P50),
		errs:           lv.Errors,
		requests:       lv.Requests,
		steady:         run.Steady,
		client:         run.Client,
	}
	b.rows = append(b.rows, r)
	fmt.Fprintf(b.stderr, "load: %s, %d streams: %.0f tokens/s, %.2f µs CPU/token, %.1f KiB RSS/stream (heap %.1f, stacks %.1f, %.2f goroutines), TTFT p50 %.1f ms, TPOT p50 %.2f ms\n",
		b.label, r.streams, r.tps, float64(r.cpuPerToken())/1e3, r.rssPerStream/1024, r.heapPerStream/1024, r.stackPerStream/1024, r.gPerStream, r.ttft, r.tpot)
	return nil
}

func (b *benchSink) Finish(string) error { return nil }

// heapProfiler is the Observer that writes the heap profile (-memprofile) once, during the
// measurement window of the largest level, while every stream is in flight.
type heapProfiler struct {
	path    string
	streams int
	done    bool
	err     error
}

func (h *heapProfiler) LevelStarted(int, int) {}

func (h *heapProfiler) Live(s sweep.LiveStats) {
	if h.done || h.path == "" || s.Concurrency != h.streams || s.Phase != record.PhaseMeasure {
		return
	}
	h.done = true
	f, err := os.Create(h.path)
	if err != nil {
		h.err = fmt.Errorf("memprofile: %w", err)
		return
	}
	// The profile is as of the last GC; one more makes it describe the streams in flight.
	runtime.GC()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		h.err = fmt.Errorf("memprofile: %w", err)
	}
	if err := f.Close(); err != nil && h.err == nil {
		h.err = fmt.Errorf("memprofile: %w", err)
	}
}

func (h *heapProfiler) LevelFinished(record.Level) {}
