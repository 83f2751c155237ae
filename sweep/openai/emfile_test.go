//go:build unix

package openai

import (
	"errors"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/sim"
)

// TestClientLimitClass checks the classes of the load generator's own limits, as the
// transport wraps them, against the server's faults they used to be taken for.
func TestClientLimitClass(t *testing.T) {
	dial := func(call string, errno syscall.Errno) error {
		return &url.Error{Op: "Post", URL: "http://127.0.0.1:1/v1/chat/completions",
			Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError(call, errno)}}
	}
	for _, tc := range []struct {
		err  error
		want record.ErrorClass
	}{
		{dial("socket", syscall.EMFILE), record.ErrClient},
		{dial("socket", syscall.ENFILE), record.ErrClient},
		{dial("socket", syscall.ENOBUFS), record.ErrClient},
		{dial("connect", syscall.EADDRNOTAVAIL), record.ErrClient},
		{dial("connect", syscall.ECONNREFUSED), record.ErrConnect},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, record.ErrStreamBroken},
	} {
		if got := classify(tc.err, false); got != tc.want {
			t.Errorf("classify(%v) = %s, want %s", tc.err, got, tc.want)
		}
	}
}

// emfileEnv, when set, makes TestTooManyOpenFilesIsClient the child process: its value is the
// simulator's URL, served by the parent.
const emfileEnv = "KNEECAP_TEST_EMFILE_URL"

// TestTooManyOpenFilesIsClient runs, in a child process whose RLIMIT_NOFILE is lowered to a
// few descriptors above those it has open (never in the test process itself), a request while
// every descriptor is taken: it fails as class client ("too many open files", the load
// generator's limit), not connect, without reaching the server; once descriptors are free
// again the next request succeeds.
func TestTooManyOpenFilesIsClient(t *testing.T) {
	if u := os.Getenv(emfileEnv); u != "" {
		emfileChild(t, u)
		return
	}
	srv := startSim(t, nil)
	cmd := exec.Command(os.Args[0], "-test.run=^TestTooManyOpenFilesIsClient$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), emfileEnv+"="+srv.URL)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child: client class, then ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
}

// emfileChild is the child of TestTooManyOpenFilesIsClient.
func emfileChild(t *testing.T, base string) {
	c := newClient(t, base, func(o *Options) { o.Model = sim.DefaultModel })
	req := record.Request{Prompt: "a b", PromptTokens: 2, MaxTokens: 4, IgnoreEOS: true}
	if rec := do(t, c, req); rec.Status != record.StatusOK {
		t.Fatalf("first request: %s %s", rec.ErrorClass, rec.Error)
	}
	c.Close() // no pooled connection: the next request must dial
	open := selfcheck.ReadLimits().OpenDescriptors
	if open <= 0 {
		t.Fatal("cannot count open descriptors")
	}
	lim := syscall.Rlimit{Cur: uint64(open + 16), Max: uint64(open + 16)}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	var held []*os.File
	for range 64 {
		f, err := os.Open(os.DevNull)
		if err != nil {
			if !errors.Is(err, syscall.EMFILE) {
				t.Fatal(err)
			}
			break
		}
		held = append(held, f)
	}
	if len(held) == 64 {
		t.Fatalf("64 files opened under a limit of %d", lim.Cur)
	}
	rec := do(t, c, req)
	for _, f := range held {
		f.Close()
	}
	if rec.Status != record.StatusError || rec.ErrorClass != record.ErrClient || !strings.Contains(rec.Error, "too many open files") {
		t.Fatalf("with every descriptor taken: %s %s %q, want error client \"too many open files\"", rec.Status, rec.ErrorClass, rec.Error)
	}
	if rec := do(t, c, req); rec.Status != record.StatusOK {
		t.Fatalf("after closing %d files: %s %s", len(held), rec.ErrorClass, rec.Error)
	}
	t.Log("child: client class, then ok (limit " + strconv.FormatUint(lim.Cur, 10) + ")")
}
