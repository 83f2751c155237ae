package selfcheck

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// effectRecord is a kernel-clock request of 32 chunks, the first at 100 ms and one every
// 20 ms after it (E2E 720 ms); gathered > 0 gives the chunks after the first that its read
// delivered with it the first's offset (FirstGather).
func effectRecord(seq, gathered int) record.Record {
	r := record.Record{Worker: 0, Seq: seq, Sent: int64(seq) * int64(time.Second), Status: record.StatusOK, Clock: record.ClockKernel, SendStamp: record.SendTX,
		TTFT: 100 * time.Millisecond, E2E: 720 * time.Millisecond, OutputTokens: 32, FirstGather: gathered}
	for j := range 32 {
		r.Chunks = append(r.Chunks, int64(100_000+20_000*j))
	}
	for j := 1; j <= gathered; j++ {
		r.Chunks[j] = r.Chunks[0]
	}
	return r
}

// TestLatencyEffects: twenty requests, ten of whose first read gathered the 2 chunks after the
// first (gather span 2 × 620 ms ÷ 31 = 40 ms). TTFT: as measured all 100 ms; moved earlier by
// the span, half are 60 ms, so p50 (type 7: halfway between the 10th and 11th of 20 sorted)
// reads 80 ms, a 20% effect, and p95 (the 19.05th) stays 100 ms. TPOT: (620 + 40) ÷ 31 for
// half, so p50 moves by half the difference, 40 ÷ (2 × 620) = 3.226%, and p95, among the
// gathered, by all of it, 40 ÷ 620 = 6.452%. ITL: the two zero gaps
// after each gathered first chunk spread at the mean gap 20 ms leave p50, p95 and p99 at 20,
// 20 and 60 ms (the gap of 60 ms to the fourth chunk stays): no effect. E2E: sends by their
// transmit stamps, no effect.
func TestLatencyEffects(t *testing.T) {
	var recs []record.Record
	for i := range 20 {
		g := 0
		if i%2 == 0 {
			g = 2
		}
		recs = append(recs, effectRecord(i, g))
	}
	eff, kernel := latencyEffects(recs, func(*record.Record) bool { return true })
	if !kernel {
		t.Fatal("kernel-clock records: not estimated")
	}
	for name, want := range map[string]float64{
		"ttft_p50": 0.20, "ttft_p95": 0, "tpot_p50": 40.0 / 1240, "tpot_p95": 40.0 / 620,
		"itl_p50": 0, "itl_p95": 0, "itl_p99": 0, "e2e_p50": 0, "e2e_p95": 0,
	} {
		if got, ok := eff[name]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %.5f", name, got, ok, want)
		}
	}
	if _, ok := eff["ttft_p99"]; ok {
		t.Errorf("ttft_p99 estimated from 20 requests: want it left out (needs 100)")
	}

	// A send stamped at the write's return 5 ms after the client's t_send may be 5 ms late:
	// TTFT and E2E may be 5 ms longer (5 ÷ 100 and 5 ÷ 720 at every percentile).
	for i := range recs {
		recs[i].FirstGather, recs[i].SendStamp = 0, record.SendWrite
		recs[i].ClientSent = recs[i].Sent - int64(5*time.Millisecond)
		recs[i].Chunks = effectRecord(i, 0).Chunks
	}
	eff, _ = latencyEffects(recs, func(*record.Record) bool { return true })
	if math.Abs(eff["ttft_p50"]-0.05) > 1e-9 || math.Abs(eff["e2e_p95"]-5.0/720) > 1e-9 || eff["tpot_p50"] != 0 {
		t.Errorf("late sends: ttft_p50 %v e2e_p95 %v tpot_p50 %v; want 0.05, 5/720, 0", eff["ttft_p50"], eff["e2e_p95"], eff["tpot_p50"])
	}

	// Mostly the client's clock: nothing is estimated; the heuristics judge.
	for i := range recs[:15] {
		recs[i].Clock = ""
	}
	if eff, kernel = latencyEffects(recs, func(*record.Record) bool { return true }); kernel || eff != nil {
		t.Errorf("mostly client-clock records: estimated %v", eff)
	}
}

// TestTurnaroundShare: one worker's requests 0, 1, 2 sent at 0, 710 and 1,500 ms (from 1 s),
// each ending 700 ms after its send (End). Request 1 came 10 ms after request 0 ended; request 2 came 90 ms
// after request 1 ended, of which 50 ms the worker's think time (Pause) and 30 ms a dial the
// server forced (Setup): 10 ms the client's. 20 ms of the 1,500 ms of cycles: 1.333%.
func TestTurnaroundShare(t *testing.T) {
	ms := func(v int64) int64 { return (1000 + v) * int64(time.Millisecond) }
	recs := []record.Record{
		{Worker: 0, Seq: 0, Sent: ms(0), End: 700 * time.Millisecond},
		{Worker: 0, Seq: 1, Sent: ms(710), End: 700 * time.Millisecond},
		{Worker: 0, Seq: 2, Sent: ms(1500), End: 700 * time.Millisecond, Pause: 50 * time.Millisecond, Setup: 30 * time.Millisecond, Dialed: true},
	}
	share, ok := turnaroundShare(recs, ms(0), ms(2000))
	if !ok || math.Abs(share-20.0/1500) > 1e-12 {
		t.Errorf("turnaround share %v (%v), want 20/1500", share, ok)
	}
	var cs record.ClientStats
	JudgeClient(&cs, recs, ms(0), ms(2000), false, 0)
	if !cs.Bound || !strings.Contains(cs.Reason, "offered load 1.3%") || cs.Tolerance != DefaultClientTolerance {
		t.Errorf("judge: bound %v reason %q tolerance %v; want bound by the offered load, 1%%", cs.Bound, cs.Reason, cs.Tolerance)
	}
	if math.Abs(cs.DialShare-1.0/3) > 1e-12 || cs.DialP99 != 30*time.Millisecond {
		t.Errorf("dial share %v p99 %v; want 1 of the window's 3 requests, 30 ms", cs.DialShare, cs.DialP99)
	}
	cs = record.ClientStats{}
	JudgeClient(&cs, recs, ms(0), ms(2000), false, 0.02)
	if cs.Bound {
		t.Errorf("tolerance 2%%: bound (%s), want not", cs.Reason)
	}
}

// TestScheduleEffects: twenty arrivals 50 ms apart from the window's start, each waiting 3 ms
// for a slot and 1 ms for a dial (not the client's), sent 1 or 3 ms late by the client in
// turn (mean 2 ms): the largest lateness, 3 ms, bounds the arrivals moved across a 1 s
// window's edges (0.3% of its load), the mean moved 2 ms of its tokens past its end (0.2%). A
// client that falls behind, arrival i sent 10·i ms late, 190 ms by the last: 19%.
func TestScheduleEffects(t *testing.T) {
	ms := func(v float64) int64 { return int64((1000 + v) * float64(time.Millisecond)) }
	recs := func(late func(i int) float64) []record.Record {
		var out []record.Record
		for i := range 20 {
			out = append(out, record.Record{Seq: i, Worker: i, Scheduled: ms(50 * float64(i)), Sent: ms(50*float64(i) + late(i) + 4),
				SlotWait: 3 * time.Millisecond, Setup: time.Millisecond, Status: record.StatusOK, TTFT: 96 * time.Millisecond, E2E: 196 * time.Millisecond})
		}
		return out
	}
	out := make(map[string]float64)
	scheduleEffects(recs(func(i int) float64 { return float64(1 + 2*(i%2)) }), ms(0), ms(1000), out)
	if math.Abs(out[EffectLoad]-0.003) > 1e-9 || math.Abs(out[effectThroughput]-0.002) > 1e-9 {
		t.Errorf("jitter: schedule effects %v: want offered_load 0.003, throughput 0.002", out)
	}
	// From the scheduled arrival TTFT is 96 ms + 4 ms of slot wait and dial + the lateness:
	// 101 or 103 ms, 100 without it. p50 (halfway between the 10th and 11th of 20) 102 ms:
	// 2 ÷ 102; p95 103 ms: 3 ÷ 103. E2E likewise from 200 ms: p95 3 ÷ 203.
	for name, want := range map[string]float64{"ttft_scheduled_p50": 2.0 / 102, "ttft_scheduled_p95": 3.0 / 103, "e2e_scheduled_p95": 3.0 / 203} {
		if math.Abs(out[name]-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, out[name], want)
		}
	}
	out = make(map[string]float64)
	scheduleEffects(recs(func(i int) float64 { return 10 * float64(i) }), ms(0), ms(1000), out)
	if math.Abs(out[EffectLoad]-0.19) > 1e-9 {
		t.Errorf("falling behind: offered_load %v, want 190 ms of 1 s (0.19)", out[EffectLoad])
	}
}

// TestEffectSummary: the largest estimate of each kind, as the reports quote them.
func TestEffectSummary(t *testing.T) {
	got := EffectSummary(map[string]float64{"ttft_p50": 0.001, "ttft_p95": 0.003, "e2e_p50": 0.0002, EffectLoad: 0.008, effectThroughput: 0.008})
	want := "client effect on TTFT p95 0.3%, on E2E p50 ≤ 0.1%, on offered load 0.8%, on throughput 0.8%"
	if got != want {
		t.Errorf("EffectSummary = %q, want %q", got, want)
	}
	if EffectLabel("ttft_scheduled_p99") != "TTFT p99 from the scheduled arrival" {
		t.Errorf("label %q", EffectLabel("ttft_scheduled_p99"))
	}
}

// TestITLGatheredMost: chunks truly 2 ms apart read four to a read (stamps 8 ms apart, three
// zero gaps in four): ITL p50 reads 0 ms, which the spread gaps (2 ms) say is wholly off —
// an estimate of 100%, which decides the verdict (the review's case: no ITL p50 estimate,
// not bound, ITL p50 reported as 0).
func TestITLGatheredMost(t *testing.T) {
	var recs []record.Record
	for i := range 20 {
		r := effectRecord(i, 3)
		for j := range r.Chunks {
			r.Chunks[j] = 100_000 + int64(j/4)*8_000
		}
		recs = append(recs, r)
	}
	eff, _ := latencyEffects(recs, func(*record.Record) bool { return true })
	if eff["itl_p50"] != 1 || !EffectDecides("itl_p50") {
		t.Errorf("itl_p50 effect %v (deciding %v), want 1", eff["itl_p50"], EffectDecides("itl_p50"))
	}
	var cs record.ClientStats
	cs.Effects, cs.Tolerance = eff, 0.01
	if classifyClient(&cs, true); !cs.Bound || !strings.Contains(cs.Reason, "ITL p50 100.0%") {
		t.Errorf("bound %v (%s), want client-bound by ITL p50", cs.Bound, cs.Reason)
	}
}

// TestEffectDecides: the headline numbers decide the verdict, the tails are recorded only.
func TestEffectDecides(t *testing.T) {
	for name, want := range map[string]bool{
		"ttft_p50": true, "ttft_p95": true, "ttft_p99": false, "tpot_p95": true, "itl_p50": true, "itl_p95": false,
		"e2e_p95": true, "ttft_scheduled_p95": true, "e2e_scheduled_p99": false, EffectLoad: true, effectThroughput: true, "other": false,
	} {
		if got := EffectDecides(name); got != want {
			t.Errorf("EffectDecides(%q) = %v, want %v", name, got, want)
		}
	}
}
