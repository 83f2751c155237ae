package main

// The kneecap binary as the tests run it: built once per test binary (without -race), started
// as a real process whose exit code, stdout and stderr the tests read, and the temporary
// directory that outlives single tests (the binary, and the results of runs several tests
// share).

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kneecap/kneecap/plots"
)

var (
	// testRoot is the temporary directory of the whole test binary (TestMain removes it);
	// t.TempDir would go with the first test that asked.
	testRoot string

	binOnce sync.Once
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	// Charts at 12 dpi (an eighth of gonum/plot's 96 in each direction): the same layout and
	// SVGs, valid PNGs of a few pixels (plots tests the 2 × images). Under the race detector
	// rasterizing was most of this package's time: an analysis with its charts took 3 s at
	// 96 dpi, 0.3 s at 12.
	plots.PNGDPI = 12
	flag.Parse()
	moreParallel()
	var err error
	if testRoot, err = os.MkdirTemp("", "kneecap-test"); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(testRoot)
	os.Exit(code)
}

// testParallel is how many of this package's parallel tests run at once unless -parallel
// says otherwise: one more than go test's default, GOMAXPROCS. They wait on sweeps' windows,
// timeouts and subprocesses: under -race on two cores the package used a third of the CPUs'
// time (140 s of CPU in 212 s; TestSweepDeadServer 0.9 s in 12.5 s), so two at once left them
// idle for most of the parallel phase (three took it from 106–116 s to 75–90 s). Four at once
// starved the clients of tests that count what their sweeps measured
// (TestFaultSweepStopsOnErrorRate saw no 429 in its window; it is now sequential). A test
// whose numbers are the assertion is not parallel, or skips when its client was starved
// (TestSweepEmbeddings, TestRatesAutoSlowRequests), or holds a bound load cannot break
// (TestSweepUsageLie's ceiling, TestShardedSweepCLI's 3 s lead on its schedule).
func testParallel() int { return runtime.GOMAXPROCS(0) + 1 }

// moreParallel sets -test.parallel to testParallel when the command line did not set it.
func moreParallel() {
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", strconv.Itoa(testParallel())); err != nil {
			panic(err)
		}
	}
}

// sharedDir returns a new directory under testRoot for a run that several tests share.
func sharedDir(t *testing.T, name string) string {
	t.Helper()
	dir, err := os.MkdirTemp(testRoot, name)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// kneecapBinary builds the command once per test binary.
func kneecapBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the kneecap binary")
	}
	binOnce.Do(func() {
		binPath = filepath.Join(testRoot, "kneecap")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = errors.New("go build: " + err.Error() + "\n" + string(out))
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// proc is a running kneecap process; wait reaps it once.
type proc struct {
	cmd            *exec.Cmd
	stdout, stderr bytes.Buffer
	done           chan struct{}
	err            error
}

// kneecapCommand is `kneecap ARGS...` with OPENAI_BASE_URL and OPENAI_API_KEY emptied, so
// that the environment of the test cannot choose a target.
func kneecapCommand(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(kneecapBinary(t), args...)
	cmd.Env = append(os.Environ(), "OPENAI_BASE_URL=", "OPENAI_API_KEY=")
	return cmd
}

func startKneecap(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: kneecapCommand(t, args...), done: make(chan struct{})}
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.err = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// deadline bounds every wait of these tests: generous, for a loaded 2-core machine.
const deadline = 30 * time.Second

// exit waits for the process and returns its exit code.
func (p *proc) exit(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(deadline):
		t.Fatalf("kneecap did not exit within %v\nstderr:\n%s", deadline, p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := syscall.Kill(p.cmd.Process.Pid, sig); err != nil {
		t.Fatal(err)
	}
}
