//go:build linux

package openai

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
)

// kernelStampsOn returns once the kernel stamps received packets: it turns timestamping on a
// little after the first socket asks (net_enable_timestamp defers it to a work queue), so a
// process's first reads may come unstamped and their records be on the client's clock. It
// writes and reads on a stamped pair until a read is stamped, at most 1,000 times 1 ms apart
// (the kernel gives no signal to wait for).
func kernelStampsOn(t *testing.T) {
	t.Helper()
	c, srv := loopbackPair(t)
	b := make([]byte, 1)
	for try := 0; c.readArrival().Load() == 0; try++ {
		if try == 1000 {
			t.Fatal("no kernel receive timestamp after 1,000 reads")
		}
		if try > 0 {
			time.Sleep(time.Millisecond) // timestamping not on yet: try again
		}
		if _, err := srv.Write(b); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, b); err != nil {
			t.Fatal(err)
		}
	}
}

// checkKernelRecord fails unless rec succeeded on the kernel's clock with its send from the
// transmit timestamp: after the client's t_send, with the client's TTFT and E2E kept, chunk
// offsets that never decrease, the first at TTFT and the last at E2E, ttft_kernel_ns = TTFT
// and end_ns ≥ E2E.
func checkKernelRecord(t *testing.T, what string, rec *record.Record) {
	t.Helper()
	if rec.Status != record.StatusOK {
		t.Fatalf("%s: %s %s %s", what, rec.Status, rec.ErrorClass, rec.Error)
	}
	if !rec.KernelClock() || rec.SendStamp != record.SendTX {
		t.Fatalf("%s: clock %q send %q, want kernel and tx", what, rec.Clock, rec.SendStamp)
	}
	if rec.ClientSent == 0 || rec.Sent < rec.ClientSent || rec.ClientTTFT <= 0 || rec.ClientE2E < rec.ClientTTFT {
		t.Fatalf("%s: sent %d, client sent %d, client TTFT %v E2E %v: want the send after the client's t_send and both client latencies",
			what, rec.Sent, rec.ClientSent, rec.ClientTTFT, rec.ClientE2E)
	}
	us := rec.Chunks
	if len(us) == 0 {
		t.Fatalf("%s: no chunk offsets", what)
	}
	last := us[len(us)-1]
	if tail := rec.ChunksTail; tail != nil {
		last += tail.SumUS // the last chunk's offset (record.ChunkTail)
	}
	if !slices.IsSorted(us) || us[0] != rec.TTFT.Microseconds() || last != rec.E2E.Microseconds() {
		t.Fatalf("%s: %d chunks from %d to %d µs (sorted %v) with TTFT %v E2E %v: want non-decreasing offsets from TTFT to E2E",
			what, len(us), us[0], last, slices.IsSorted(us), rec.TTFT, rec.E2E)
	}
	if rec.TTFTKernel != rec.TTFT || rec.End < rec.E2E {
		t.Fatalf("%s: ttft_kernel %v TTFT %v, end %v E2E %v: want ttft_kernel = TTFT and end ≥ E2E", what, rec.TTFTKernel, rec.TTFT, rec.End, rec.E2E)
	}
}

// TestKernelClockReadDelay: the simulator sends its first token T = 20 ms after it read the
// request and the next ones I apart; the client sleeps d before each read (slowConn), so it
// timestamps the first chunk at least d after the connection was dialled. Sparse tokens
// (I = 250 ms, 2 tokens): the first read, at ≈ d = 100 ms, holds the first chunk alone, whose
// kernel stamp is its arrival: TTFT on the kernel's clock is within [T, (T + d) ÷ 2] (the
// simulator's floor; at least half the injected lateness removed) while the client's is
// ≥ d − conn_wait, and nothing shared the first chunk's read (first_gather 0). Dense tokens
// (I = 1 ms, 16 of them): the first read, at ≈ d = 80 ms, holds the first chunks together;
// they share its stamp, hence one offset (first_gather ≥ 1), and the offsets never decrease.
func TestKernelClockReadDelay(t *testing.T) {
	kernelStampsOn(t)
	const ttft = 20 * time.Millisecond
	for _, tc := range []struct {
		name   string
		itl    time.Duration
		tokens int
		delay  time.Duration
	}{
		{"sparse", 250 * time.Millisecond, 2, 100 * time.Millisecond},
		{"dense", time.Millisecond, 16, 80 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = ttft, tc.itl })
			cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
			slowDial(cl, tc.delay)
			rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: tc.tokens, IgnoreEOS: true})
			checkKernelRecord(t, tc.name, &rec)
			t.Logf("TTFT kernel %v client %v; first_gather %d; chunks %v", rec.TTFT, rec.ClientTTFT, rec.FirstGather, rec.Chunks)
			// net/http's read loop starts its first read once the connection is dialled,
			// before t_send: the client's TTFT is at least the delay less conn_wait.
			if rec.TTFT < ttft || rec.ClientTTFT < tc.delay-rec.ConnWait || rec.ClientTTFT < rec.TTFT {
				t.Fatalf("TTFT %v, client TTFT %v: want ≥ %v (the simulator's) and the client's ≥ %v − conn_wait %v (its read delay) and ≥ the kernel's",
					rec.TTFT, rec.ClientTTFT, ttft, tc.delay, rec.ConnWait)
			}
			if tc.tokens == 2 {
				if rec.TTFT > (ttft+tc.delay)/2 || rec.FirstGather != 0 {
					t.Fatalf("TTFT %v, first_gather %d: want ≤ %v and 0", rec.TTFT, rec.FirstGather, (ttft+tc.delay)/2)
				}
				return
			}
			if rec.FirstGather < 1 || rec.FirstGather >= len(rec.Chunks) {
				t.Fatalf("first_gather %d of %d chunks: want the first read to hold several", rec.FirstGather, len(rec.Chunks))
			}
			for j := 1; j <= rec.FirstGather; j++ {
				if rec.Chunks[j] != rec.Chunks[0] {
					t.Fatalf("chunks %v: the %d chunks gathered with the first do not share its offset", rec.Chunks, rec.FirstGather)
				}
			}
		})
	}
}

// TestKernelClockManyRequests: transmit stamps stay on over hundreds of requests on reused
// connections and over a long stream, and no read fails (a non-empty error queue raises
// EPOLLERR; Go's poller fails the reads of a descriptor whose event is EPOLLERR alone):
// 8 workers × 50 requests against the simulator (TTFT 1 ms, ITL 0.1 ms, 8 tokens), then one
// stream of 20,000 tokens (ITL 1 µs). Every record is on the kernel's clock with its own transmit stamp:
// at or after its client t_send, so never the previous request's on the same connection.
func TestKernelClockManyRequests(t *testing.T) {
	kernelStampsOn(t)
	srv := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, 100*time.Microsecond })
	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	const workers, each = 8, 50
	recs := make([]record.Record, workers*each)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				cl.Do(context.Background(), &record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 8, IgnoreEOS: true}, &recs[w*each+i])
			}
		})
	}
	wg.Wait()
	reused := 0
	for i := range recs {
		checkKernelRecord(t, fmt.Sprintf("request %d", i), &recs[i])
		if !recs[i].Dialed {
			reused++
		}
	}
	if reused < len(recs)/2 {
		t.Fatalf("%d of %d requests on reused connections, want most", reused, len(recs))
	}
	srv = startSim(t, func(c *sim.Config) { c.TTFT, c.ITL = time.Millisecond, time.Microsecond })
	cl = newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 20000, IgnoreEOS: true})
	checkKernelRecord(t, "long stream", &rec)
	if rec.OutputTokens != 20000 {
		t.Fatalf("long stream: %d tokens, want 20,000", rec.OutputTokens)
	}
}

// TestKernelClockSetup: against the simulator with close_after_stream, which closes every
// connection after its stream, every request's connection was dialled for it (the pooled one
// was closed): dialed, with setup_ns its conn_wait, > 0.
func TestKernelClockSetup(t *testing.T) {
	srv := startSim(t, func(c *sim.Config) { c.TTFT, c.ITL, c.CloseAfterStream = time.Millisecond, 100*time.Microsecond, true })
	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	for i := range 8 {
		rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 4, IgnoreEOS: true})
		if rec.Status != record.StatusOK {
			t.Fatalf("request %d: %s %s", i, rec.Status, rec.Error)
		}
		if !rec.Dialed || rec.Setup <= 0 || rec.Setup < rec.ConnWait || (!rec.Retried && rec.Setup != rec.ConnWait) {
			t.Fatalf("request %d: dialed %v, setup %v, conn_wait %v, retried %v: want a dial counted as set-up",
				i, rec.Dialed, rec.Setup, rec.ConnWait, rec.Retried)
		}
	}
}

// TestKernelClockEnd: a server that sends [DONE] and ends its body 30 ms later (the chunked
// encoding's last chunk). The synchronous drain reads that end: end_ns ≥ E2E + 25 ms (the
// body's end was written 30 ms after [DONE], which arrived after the last content chunk;
// 5 ms for the [DONE] segment's own delivery), below the drain's bound.
func TestKernelClockEnd(t *testing.T) {
	kernelStampsOn(t)
	const late = 30 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := newSSE(w)
		s.data(contentChunk("a"))
		s.data(contentChunk("b"))
		s.data(usageChunk(1, 2))
		s.data("[DONE]")
		time.Sleep(late) // the server's late end of the body, under test
	}))
	t.Cleanup(srv.Close)
	cl := newClient(t, srv.URL, nil)
	rec := do(t, cl, record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: 2})
	checkKernelRecord(t, "late end", &rec)
	if rec.End < rec.E2E+late-5*time.Millisecond || rec.End > rec.E2E+drainTimeout {
		t.Fatalf("end %v, E2E %v: want the body's end, ≥ E2E + %v", rec.End, rec.E2E, late-5*time.Millisecond)
	}
}

// TestTXStampsNeverFailReads: a request that can fill the send buffer is not transmit-stamped
// (beginRequest), so no stamp can be queued while the socket is neither readable nor
// writable, the state in which the poller would fail the connection's reads ("not
// pollable"). The client's send buffer is the kernel's minimum (SO_SNDBUF 4,096, the stamp
// limit a quarter of it), it writes 1 MiB that the peer reads only after 10 ms, and a read
// waits for the peer's answer meanwhile: it gets the answer in each of 10 rounds, and the
// request's send is its write's (send_stamp write). With stamps forced on, the same read
// failed with "not pollable" in about half the rounds (measured; DESIGN §3.3). A small request
// on the same connection is stamped again.
func TestTXStampsNeverFailReads(t *testing.T) {
	const size = 1 << 20
	for round := range 10 {
		c, srv := loopbackPair(t)
		if err := c.rc.Control(func(fd uintptr) {
			if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_SNDBUF, 4096); err != nil {
				t.Error(err)
			}
			if !c.tx.enableTX(int(fd)) {
				t.Error("SO_TIMESTAMPING refused")
			}
		}); err != nil {
			t.Fatal(err)
		}
		mark := c.beginRequest(size)
		if c.tx.on.Load() || c.tx.maxBytes <= 0 || c.tx.maxBytes >= size {
			t.Fatalf("round %d: a %d-byte request with a stamp limit of %d bytes: TX on %v", round, size, c.tx.maxBytes, c.tx.on.Load())
		}
		werr, rerr := make(chan error, 1), make(chan error, 1)
		go func() {
			buf := make([]byte, 1024)
			var err error
			for i := 0; i < size/len(buf) && err == nil; i++ {
				_, err = c.Write(buf)
			}
			werr <- err
		}()
		go func() {
			b := make([]byte, 2)
			_, err := io.ReadFull(c, b)
			rerr <- err
		}()
		go func() {
			time.Sleep(10 * time.Millisecond) // the peer lets the client's buffer fill, under test
			if _, err := io.CopyN(io.Discard, srv, size); err == nil {
				_, _ = srv.Write([]byte("ok"))
			}
		}()
		if err := <-werr; err != nil {
			t.Fatalf("round %d: write: %v", round, err)
		}
		if err := <-rerr; err != nil {
			t.Fatalf("round %d: the read waiting for the answer failed: %v", round, err)
		}
		if _, how, ok := c.sendTime(mark); !ok || how != record.SendWrite {
			t.Fatalf("round %d: send %q (%v), want write", round, how, ok)
		}
		mark = c.beginRequest(100)
		if _, err := c.Write(make([]byte, 100)); err != nil || !c.tx.on.Load() {
			t.Fatalf("round %d: small request: TX on %v, write %v", round, c.tx.on.Load(), err)
		}
		if _, how, ok := c.sendTime(mark); !ok || how != record.SendTX {
			t.Fatalf("round %d: small request: send %q (%v), want tx", round, how, ok)
		}
	}
}

// BenchmarkStampConnWrite measures what a transmit stamp costs a request/answer exchange on
// loopback: a 512-byte write, the peer's 1-byte answer read back, then the request's send.
// "tx" reads the stamp from the error queue (after the write, and once more in the read when
// the write did not find it: TCP autocorking can hold back a write that follows another),
// "write" has transmit stamps off (the send is then the write's return).
func BenchmarkStampConnWrite(b *testing.B) {
	for _, tx := range []bool{true, false} {
		name := "write"
		if tx {
			name = "tx"
		}
		b.Run(name, func(b *testing.B) {
			c, srv := loopbackPair(&testing.T{})
			defer c.Close()
			defer srv.Close()
			go func() {
				req, ans := make([]byte, 512), []byte{1}
				for {
					if _, err := io.ReadFull(srv, req); err != nil {
						return
					}
					if _, err := srv.Write(ans); err != nil {
						return
					}
				}
			}()
			size := 512
			if !tx {
				size = c.tx.maxBytes + 1
			}
			c.beginRequest(size) // TX_SOFTWARE on or off
			if c.tx.on.Load() != tx {
				b.Fatalf("TX on %v, want %v", c.tx.on.Load(), tx)
			}
			req, ans := make([]byte, 512), make([]byte, 1)
			b.ReportAllocs()
			for b.Loop() {
				mark := c.tx.written.Load()
				if _, err := c.Write(req); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, ans); err != nil {
					b.Fatal(err)
				}
				if _, how, ok := c.sendTime(mark); !ok || (how == record.SendTX) != tx {
					b.Fatalf("send %q %v", how, ok)
				}
			}
		})
	}
}

// TestTXStampsGiveUp: on a connection whose device never stamps (simulated: TX_SOFTWARE
// cleared behind the wrapper's back), each request's send is its write's, and after
// maxMisses requests in a row without a stamp the connection stops asking for them (no
// error-queue reads left to pay for).
func TestTXStampsGiveUp(t *testing.T) {
	c, srv := loopbackPair(t)
	go func() { _, _ = io.Copy(io.Discard, srv) }()
	if err := c.rc.Control(func(fd uintptr) {
		if err := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPING, tsFlags); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	for i := range maxMisses + 1 {
		mark := c.beginRequest(100)
		if on, want := c.tx.on.Load(), i < maxMisses; on != want {
			t.Fatalf("request %d: TX on %v, want %v", i, on, want)
		}
		if _, err := c.Write(make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		if _, how, ok := c.sendTime(mark); !ok || how != record.SendWrite {
			t.Fatalf("request %d: send %q (%v), want write", i, how, ok)
		}
	}
}
