//go:build linux

package openai

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"runtime/debug"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/sim"
)

// TestStampConnErrorsLikeTCP: a stamped connection's read errors are those of a plain TCP
// connection's Read: a deadline is a *net.OpError{Op: "read", Net: "tcp", Source: the local
// address, Addr: the remote} that is a Timeout() and os.ErrDeadlineExceeded (not the raw conn's
// Op "raw-read"), and a read of a closed conn is the same OpError over
// net.ErrClosed.
func TestStampConnErrorsLikeTCP(t *testing.T) {
	c, _ := loopbackPair(t)
	if err := c.SetReadDeadline(time.Now().Add(10 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	check := func(what string, err error, is error) {
		t.Helper()
		var op *net.OpError
		if !errors.As(err, &op) || op.Op != "read" || op.Net != "tcp" ||
			op.Source == nil || op.Source.String() != c.LocalAddr().String() ||
			op.Addr == nil || op.Addr.String() != c.RemoteAddr().String() || !errors.Is(err, is) {
			t.Fatalf("%s: %#v (%v); want OpError{read, tcp, %v, %v} over %v", what, err, err, c.LocalAddr(), c.RemoteAddr(), is)
		}
	}
	_, err := c.Read(make([]byte, 8))
	check("deadline", err, os.ErrDeadlineExceeded)
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("deadline: %v is not a net.Error timeout", err)
	}
	_ = c.Close()
	_, err = c.Read(make([]byte, 8))
	check("closed", err, net.ErrClosed)
}

// TestReadLagThroughTLS: under TLS, net/http's connection is a *tls.Conn over the stamped TCP
// conn; clockOf finds the stamped conn through NetConn(), and a level against the simulator over
// HTTPS whose reads are delayed 12 ms (as in TestReadLagVerdict: beyond the 2 ms ITL, the
// reader falls behind) has a non-zero read lag over at least ReadLagCoverageMin of its chunks.
// Not the 12 ms: behind TLS one read gathers what the kernel holds (up to maxRecvmsg) and its
// stamp is its last packet's, so the lag is a lower bound (DESIGN §3.3; measured p99 ≈ 10 ms
// against ≈ 34 ms over plain HTTP on the same level). Every request is on the kernel's clock
// with its send from the transmit stamp of the TLS record that carried its last byte.
func TestReadLagThroughTLS(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	kernelStampsOn(t)
	cfg, err := sim.Profile("fixed")
	if err != nil {
		t.Fatal(err)
	}
	cfg.TTFT, cfg.ITL, cfg.TokensPerChunk = 20*time.Millisecond, 2*time.Millisecond, 1
	s, err := sim.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewTLSServer(s)
	t.Cleanup(func() { srv.Close(); s.Close() })

	raw, err := dialStamped(&net.Dialer{})(context.Background(), "tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(raw, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // the test server's own certificate
	defer tc.Close()
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	sc, ok := raw.(*stampConn)
	if !ok || clockOf(tc) != connClock(sc) {
		t.Fatalf("clockOf(*tls.Conn) is not the stamped conn (stamped %v)", ok)
	}

	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel; o.InsecureSkipVerify = true })
	const delay = 12 * time.Millisecond
	slowDial(cl, delay)
	recs, runs := runReadLagLevel(t, cl)
	cs := runs[0].Client
	if cs == nil {
		t.Fatal("no client stats")
	}
	t.Logf("TLS, delay %v: read lag p50 %v p99 %v over %d chunks (coverage %.2f); bound %v: %s",
		delay, cs.ReadLagP50, cs.ReadLagP99, cs.ReadLagChunks, cs.ReadLagCoverage, cs.Bound, cs.Reason)
	if cs.Evidence != record.EvidenceEstimates || cs.ReadLagCoverage < selfcheck.ReadLagCoverageMin || cs.ReadLagP99 <= 0 {
		t.Fatalf("evidence %q, coverage %.2f, p99 %v; want the estimates, read lag over ≥ %.0f%% of the chunks, p99 > 0",
			cs.Evidence, cs.ReadLagCoverage, cs.ReadLagP99, 100*selfcheck.ReadLagCoverageMin)
	}
	lv := analysis.Summarize(record.GroupRecords(runs, recs), analysis.DefaultOptions())[0]
	checkKernelTTFT(t, recs, &lv, cfg.TTFT)
	// The request's last byte is the last byte of the TLS record that carried it: every
	// request is on the kernel's clock, sent by its transmit stamp.
	for i := range recs {
		if r := &recs[i]; r.OK() {
			checkKernelRecord(t, fmt.Sprintf("record %d.%d", r.Worker, r.Seq), r)
		}
	}
}

// checkKernelTTFT: every successful record's TTFT as the kernel saw it, where stamped, is at
// least the simulator's TTFT (ttft: the server waits that long after it reads the request,
// which is after t_send) and at most the client's TTFT (the kernel has the bytes before the
// client reads them; 1 ms for the two clock reads: the client's TTFT is monotonic, the
// kernel's stamps wall-clock); at least half the records are stamped (ReadLagCoverageMin),
// and the level's ttft_kernel_ms p50 is at most its TTFT p50 on the client's clock.
func checkKernelTTFT(t *testing.T, recs []record.Record, lv *analysis.Level, ttft time.Duration) {
	t.Helper()
	ok, stamped := 0, 0
	for i := range recs {
		r := &recs[i]
		if !r.OK() {
			continue
		}
		ok++
		if r.TTFTKernel == 0 {
			continue
		}
		stamped++
		client := r.TTFT
		if r.KernelClock() {
			client = r.ClientTTFT
		}
		if r.TTFTKernel < ttft || r.TTFTKernel > client+time.Millisecond {
			t.Fatalf("record %d.%d: ttft_kernel %v, client's TTFT %v; want within [%v, that + 1 ms]", r.Worker, r.Seq, r.TTFTKernel, client, ttft)
		}
	}
	if ok == 0 || float64(stamped) < selfcheck.ReadLagCoverageMin*float64(ok) {
		t.Fatalf("%d of %d successful records have ttft_kernel; want ≥ %.0f%%", stamped, ok, 100*selfcheck.ReadLagCoverageMin)
	}
	k, client := lv.TTFTKernel, lv.TTFT.P50
	if lv.TTFTClient != nil {
		client = lv.TTFTClient.P50
	}
	if k == nil || k.Requests == 0 || k.P50 > client || k.P50 < analysis.Float(ttft.Seconds()*1e3) {
		t.Fatalf("level ttft_kernel_ms %+v, client's ttft p50 %v; want a p50 in [%v ms, that]", k, client, ttft.Seconds()*1e3)
	}
	t.Logf("ttft_kernel p50 %.3f ms (client's ttft p50 %.3f ms) over %d requests of the level; %d of the run's %d successful records stamped", k.P50, client, k.Requests, stamped, ok)
}
