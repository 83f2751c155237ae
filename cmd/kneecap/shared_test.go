package main

// Runs that several tests assert on. Under -race a sweep, or an analysis with its charts,
// costs seconds of CPU (rendering the PNGs alone takes about 2 s), so a run whose outcome
// more than one test reads is made once (once per -count round), by the first test that
// asks, in a directory under testRoot; the tests that share it only read it.

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/kneecap/kneecap/rundir"
)

// cmdRun is one in-process `kneecap` command: what it printed and returned.
type cmdRun struct {
	stdout, stderr string
	err            error
}

// runCmd runs kneecap with args in a testEnv that setup (if not nil) may change first, and
// returns what it printed.
func runCmd(setup func(*env), args ...string) cmdRun {
	e, stdout, stderr := testEnv()
	if setup != nil {
		setup(e)
	}
	err := run(context.Background(), e, args)
	return cmdRun{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// dirRun is a command that wrote into dir.
type dirRun struct {
	dir string
	cmdRun
}

// shared is a run made once per round for the tests that share it: a test that asks again
// (go test -count=N runs every test N times) gets the next round's, made afresh, so that
// repeating a test repeats its run.
type shared[T any] struct {
	mu     sync.Mutex
	rounds []*round[T]
	asked  map[string]int // by test name: how many times it has asked
}

// round is one round's value, made by the first test of the round that asks.
type round[T any] struct {
	once sync.Once
	v    T
}

// get returns the value of t's next round, made by f if no test made it yet.
func (s *shared[T]) get(t *testing.T, f func() T) T {
	s.mu.Lock()
	if s.asked == nil {
		s.asked = map[string]int{}
	}
	i := s.asked[t.Name()]
	s.asked[t.Name()]++
	for len(s.rounds) <= i {
		s.rounds = append(s.rounds, &round[T]{})
	}
	r := s.rounds[i]
	s.mu.Unlock()
	r.once.Do(func() { r.v = f() })
	return r.v
}

// sharedConfig writes body as a config file in a new directory under testRoot and returns
// the file and the path of a results directory beside it.
func sharedConfig(name, body string) (cfg, dir string, err error) {
	base, err := os.MkdirTemp(testRoot, name)
	if err != nil {
		return "", "", err
	}
	cfg = filepath.Join(base, name+".yaml")
	return cfg, filepath.Join(base, "run"), os.WriteFile(cfg, []byte(body), 0o644)
}

// fastSweep is a three-level sweep of the in-process simulator (TestSweepSimulator's); its
// header is one of TestSweepHeaderWithoutName's.
var fastSweep shared[dirRun]

// fastSweepConfig is fastSweep's configuration: the demo simulator (the default), short
// windows, the server's metrics scraped every 100 ms. Its requests take about 70 ms, of which
// the client's own turnaround between two, under -race and beside the in-process simulator,
// is about 1 ms (1.4%): the client may move a number by 5% (client_tolerance), and no level
// is run again (the tests count them; retries are TestRetryExcluded's).
const fastSweepConfig = `name: fast
workload:
  input_tokens: {dist: fixed, mean: 32}
  output_tokens: {dist: fixed, mean: 16}
sweep:
  warmup: 200ms
  duration: 800ms
  min_requests: 10
  max_duration: 1600ms
  drain_timeout: 5s
  client_tolerance: 0.05
  retry_excluded: 0
server_metrics: {interval: 100ms}
`

// sharedFastSweep runs `kneecap sweep -c FAST --levels 1,2,4 -o DIR` once; the test fails if
// the sweep did.
func sharedFastSweep(t *testing.T) (dir string, r cmdRun) {
	t.Helper()
	s := fastSweep.get(t, func() (s dirRun) {
		cfg, dir, err := sharedConfig("fast", fastSweepConfig)
		if err != nil {
			s.err = err
			return s
		}
		s.dir, s.cmdRun = dir, runCmd(nil, "sweep", "-c", cfg, "--levels", "1,2,4", "-o", dir)
		return s
	})
	if s.err != nil {
		t.Fatalf("sweep: %v\nstderr:\n%s", s.err, s.stderr)
	}
	return s.dir, s.cmdRun
}

// interruptedSweep is TestSweepInterruptAndResume's two-level sweep without a name: run with
// the interrupt already delivered, then resumed. The resumed run's header is one of
// TestSweepHeaderWithoutName's.
var interruptedSweep shared[interrupted]

// interrupted is what the interrupted sweep and its resume left: the results directory, the
// interrupted run and the directory as it left it, and the resumed run.
type interrupted struct {
	dir           string
	first         cmdRun
	afterFirst    *rundir.Run
	afterFirstErr error
	resumed       cmdRun
	err           error // of writing the configuration
}

// interruptedSweepConfig is interruptedSweep's configuration: no name, two short levels, the
// server not asked what it is.
const interruptedSweepConfig = `sweep:
  levels: [1, 2]
  warmup: 100ms
  duration: 500ms
  min_requests: 5
  max_duration: 1s
  retry_excluded: 0 # the tests count levels; retries are TestRetryExcluded's
workload: {input_tokens: {mean: 16}, output_tokens: {mean: 8}}
target: {server_info: false}
`

// sharedInterruptedSweep runs the interrupted sweep and its resume once.
func sharedInterruptedSweep(t *testing.T) interrupted {
	t.Helper()
	s := interruptedSweep.get(t, func() (s interrupted) {
		var cfg string
		if cfg, s.dir, s.err = sharedConfig("interrupted", interruptedSweepConfig); s.err != nil {
			return s
		}
		s.first = runCmd(func(e *env) {
			stopped, cancel := context.WithCancel(context.Background())
			cancel()
			e.interrupt = stopped
		}, "sweep", "-c", cfg, "-o", s.dir)
		s.afterFirst, s.afterFirstErr = rundir.Read(s.dir)
		s.resumed = runCmd(nil, "sweep", "--resume", s.dir)
		return s
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s
}
