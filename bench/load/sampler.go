package main

import (
	"cmp"
	"context"
	"runtime"
	"runtime/metrics"
	"slices"
	"sync"
	"time"
)

// The sampler: this process's CPU time and memory, the sampler's own CPU time and the
// simulator's, read every sampleEvery, and what it saw over one level.

// sampleEvery is the period of the CPU and RSS sampler.
const sampleEvery = 20 * time.Millisecond

// sample is one reading of the sampler: Unix ns, this process's CPU time and RSS, the
// sampler's own CPU time so far, the Go runtime's memory figures and the simulator's CPU time.
type sample struct {
	t        int64
	cpu      time.Duration
	benchCPU time.Duration // the sampler thread's CPU time so far: the benchmark's own cost
	rss      int64
	mem      goMem
	simCPU   time.Duration
}

// goMem is the Go runtime's view of this process's memory (runtime/metrics, which does not
// stop the world).
type goMem struct {
	heap       int64 // bytes of heap objects, live or not yet swept
	stacks     int64 // bytes of goroutine stacks
	goroutines int64
}

// memMetrics are the runtime/metrics read into goMem, in goMem's order.
var memMetrics = [...]string{
	"/memory/classes/heap/objects:bytes",
	"/memory/classes/heap/stacks:bytes",
	"/sched/goroutines:goroutines",
}

// sampler reads CPU and memory every sampleEvery. Its goroutine is locked to one OS thread
// whose CPU time it records, so the benchmark's own sampling is not billed to the client.
type sampler struct {
	pid int
	mu  sync.Mutex
	ms  []metrics.Sample // preallocated: sample allocates nothing but the /proc reads
	s   []sample
	err error
}

func newSampler(pid int) *sampler {
	s := &sampler{pid: pid, ms: make([]metrics.Sample, len(memMetrics))}
	for i, name := range memMetrics {
		s.ms[i].Name = name
	}
	return s
}

// sample takes one reading; benchCPU is the sampler thread's CPU time so far.
func (s *sampler) sample(benchCPU time.Duration) error {
	cpu, err := selfCPU()
	if err != nil {
		return err
	}
	rss, err := vmRSS()
	if err != nil {
		return err
	}
	simCPU, err := procCPU(s.pid)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	metrics.Read(s.ms)
	var mem goMem
	for i, v := range []*int64{&mem.heap, &mem.stacks, &mem.goroutines} {
		if s.ms[i].Value.Kind() == metrics.KindUint64 {
			*v = int64(s.ms[i].Value.Uint64())
		}
	}
	s.s = append(s.s, sample{t: time.Now().UnixNano(), cpu: cpu, benchCPU: benchCPU, rss: rss, mem: mem, simCPU: simCPU})
	return nil
}

func (s *sampler) last() sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.s[len(s.s)-1]
}

func (s *sampler) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

func (s *sampler) run(ctx context.Context) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	t0, err := threadCPU()
	if err != nil {
		s.fail(err)
		return
	}
	tk := time.NewTicker(sampleEvery)
	defer tk.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
			t, err := threadCPU()
			if err != nil {
				s.fail(err)
				return
			}
			if err := s.sample(t - t0); err != nil {
				s.fail(err)
				return
			}
		}
	}
}

// span is what the sampler saw over one level.
type span struct {
	cpu, benchCPU, simCPU time.Duration // over the window, interpolated
	peakRSS               int64         // largest RSS sampled during the level
	peakMem               goMem         // largest of each Go memory figure during the level
}

// between returns the CPU times over [t0, t1), linearly interpolated between samples, and the
// largest memory figures sampled in [r0, r1].
func (s *sampler) between(t0, t1, r0, r1 int64) (span, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return span{}, s.err
	}
	type cpus struct{ cpu, bench, sim time.Duration }
	at := func(t int64) cpus {
		i, _ := slices.BinarySearchFunc(s.s, t, func(x sample, t int64) int { return cmp.Compare(x.t, t) })
		switch {
		case i == 0:
			return cpus{s.s[0].cpu, s.s[0].benchCPU, s.s[0].simCPU}
		case i == len(s.s):
			x := s.s[i-1]
			return cpus{x.cpu, x.benchCPU, x.simCPU}
		}
		a, b := s.s[i-1], s.s[i]
		f := float64(t-a.t) / float64(b.t-a.t)
		lerp := func(x, y time.Duration) time.Duration { return x + time.Duration(f*float64(y-x)) }
		return cpus{lerp(a.cpu, b.cpu), lerp(a.benchCPU, b.benchCPU), lerp(a.simCPU, b.simCPU)}
	}
	c0, c1 := at(t0), at(t1)
	sp := span{cpu: c1.cpu - c0.cpu, benchCPU: c1.bench - c0.bench, simCPU: c1.sim - c0.sim}
	for _, x := range s.s {
		if x.t >= r0 && x.t <= r1 {
			sp.peakRSS = max(sp.peakRSS, x.rss)
			sp.peakMem.heap = max(sp.peakMem.heap, x.mem.heap)
			sp.peakMem.stacks = max(sp.peakMem.stacks, x.mem.stacks)
			sp.peakMem.goroutines = max(sp.peakMem.goroutines, x.mem.goroutines)
		}
	}
	return sp, nil
}
