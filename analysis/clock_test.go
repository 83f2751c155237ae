package analysis

import (
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// TestSummarizeClock: a level's clock is what its latency population's records say: kernel,
// client or mixed, the share of each and how the kernel records' sends were taken; TTFT on the
// client's clock is the kernel records' client_ttft and the client records' TTFT, absent when no
// record is on the kernel's clock. A failure and a request sent outside the window do not
// count (they are not in the latency population).
func TestSummarizeClock(t *testing.T) {
	ms := time.Millisecond
	kernel := func(sent int64, ttft, client time.Duration, send string) record.Record {
		return record.Record{Sent: sent, TTFT: ttft, E2E: 2 * ttft, OutputTokens: 1, Status: record.StatusOK,
			Clock: record.ClockKernel, SendStamp: send, ClientSent: sent - int64(ms), ClientTTFT: client, ClientE2E: 2 * client}
	}
	client := func(sent int64, ttft time.Duration) record.Record {
		return record.Record{Sent: sent, TTFT: ttft, E2E: 2 * ttft, OutputTokens: 1, Status: record.StatusOK}
	}
	failed := record.Record{Sent: 11 * sec, E2E: ms, Status: record.StatusError, ErrorClass: record.ErrHTTP5xx}
	outside := kernel(25*sec, 100*ms, 900*ms, record.SendWrite)
	for _, tc := range []struct {
		name       string
		recs       []record.Record
		want       Clock
		clientP50  float64 // ms; 0: no ttft_client_ms
		clientReqs int
	}{
		{"kernel tx", []record.Record{kernel(11*sec, 100*ms, 110*ms, record.SendTX), kernel(12*sec, 100*ms, 130*ms, record.SendTX), failed, outside},
			Clock{Latencies: ClockKernel, KernelShare: 1, Requests: 2, Send: record.SendTX, SendTXShare: 1}, 120, 2},
		{"client", []record.Record{client(11*sec, 100*ms), client(12*sec, 300*ms), failed},
			Clock{Latencies: ClockClient, Requests: 2}, 0, 0},
		{"mixed", []record.Record{kernel(11*sec, 100*ms, 110*ms, record.SendTX), kernel(12*sec, 100*ms, 130*ms, record.SendWrite),
			client(13*sec, 150*ms), client(14*sec, 200*ms), outside},
			Clock{Latencies: ClockMixed, KernelShare: 0.5, Requests: 4, Send: ClockMixed, SendTXShare: 0.5}, 140, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := record.LevelRun{Concurrency: 1, W0: 10 * sec, W1: 20 * sec, Steady: true, Slices: 10}
			lv := Summarize([]record.Level{{Run: run, Records: tc.recs}}, DefaultOptions())[0]
			if lv.Clock == nil || *lv.Clock != tc.want {
				t.Fatalf("clock %+v, want %+v", lv.Clock, tc.want)
			}
			c := lv.TTFTClient
			switch {
			case tc.clientP50 == 0 && c != nil:
				t.Fatalf("ttft_client_ms %+v, want none", c)
			case tc.clientP50 != 0 && (c == nil || float64(c.P50) != tc.clientP50 || c.Requests != tc.clientReqs):
				t.Fatalf("ttft_client_ms %+v, want p50 %v ms over %d requests", c, tc.clientP50, tc.clientReqs)
			}
		})
	}
	run := record.LevelRun{Concurrency: 1, W0: 10 * sec, W1: 20 * sec, Steady: true, Slices: 10}
	if lv := Summarize([]record.Level{{Run: run, Records: []record.Record{failed}}}, DefaultOptions())[0]; lv.Clock != nil {
		t.Fatalf("no successful request: clock %+v, want none", lv.Clock)
	}
}
