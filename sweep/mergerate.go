package sweep

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// The merge of an arrival-rate or trace level run as shards of one global schedule (DESIGN
// §8): shard i of N sent arrivals k ≡ i (mod N) of the schedule one process would have drawn,
// each record's Seq the global index k and its Scheduled the schedule's time on the shard's
// clock. The shards' records reach MergeLevel on the reference clock (Record.Shift by
// −ClockOffset.Offset).

// Replay is what MergeLevel needs to replay a rate or trace level's global schedule: the
// sweep's Schedule (level k starts at LevelStart(k) on the reference clock), its arrival
// process, and the trace of a trace replay — nil when it could not be read, and then a trace
// level's scheduled times are not checked, only its indices.
type Replay struct {
	Schedule *Schedule
	Arrival  Arrival
	Trace    *workload.Trace
}

// gaps returns the generator of run's arrival gaps, as one process drew them (nil: unknown).
func (r *Replay) gaps(run *record.LevelRun) func() time.Duration {
	switch {
	case r == nil || r.Schedule == nil:
		return nil
	case run.TimeScale > 0:
		if r.Trace == nil {
			return nil
		}
		return r.Trace.Gaps(run.TimeScale)
	}
	return r.Arrival.Gaps(run.OfferedRPS, run.Index)
}

// passNote is a trace level's note that one pass of the trace is longer than max_duration
// (the level measures one pass; traceLevelProtocol), as each shard noted it.
func (r *Replay) passNote(run *record.LevelRun, proto Protocol) []string {
	if r == nil || r.Trace == nil || !(run.TimeScale > 0) {
		return nil
	}
	if _, note := traceLevelProtocol(r.Trace, proto, run.TimeScale, true); note != "" {
		return []string{note}
	}
	return nil
}

// LevelName names a merged level in errors and warnings: "level 2 (8 requests/s)", "level 1
// (time scale 2)", "level 3 (concurrency 16)".
func LevelName(run *record.LevelRun) string {
	switch {
	case run.TimeScale > 0:
		return fmt.Sprintf("level %d (time scale %g)", run.Index+1, run.TimeScale)
	case run.OfferedRPS > 0:
		return fmt.Sprintf("level %d (%g requests/s)", run.Index+1, run.OfferedRPS)
	}
	return fmt.Sprintf("level %d (concurrency %d)", run.Index+1, run.Concurrency)
}

// levelSpan is where a merged rate or trace level's arrivals lie on the reference clock:
// its scheduled start, the end of its drain (no arrival is scheduled after it) and loadEnd,
// the common end of the shards' load, when every shard was still issuing.
type levelSpan struct{ start, end, loadEnd int64 }

// replayCheckEvery is how many arrivals checkSchedule replays between looks at its context.
const replayCheckEvery = 1 << 12

// checkSchedule checks that the shards' records (records[i] shard i's, on the reference
// clock) are one schedule: every arrival index on shard index mod N, once, in a slot of that
// shard (or −1: cancelled unsent), at the replayed schedule's time in integer nanoseconds
// (start + Σ gaps) and inside the level's span, and — unless interrupted — every index
// scheduled before span.loadEnd present. gaps nil checks the indices alone, counting as due
// those up to the last recorded one scheduled before loadEnd. A shard's indices are i, i+N,
// …: one at N × (its records + 1) or beyond cannot be its, which bounds the replay by the
// files' size whatever their times say; the replay stops with ctx's error once ctx is done.
func checkSchedule(ctx context.Context, run *record.LevelRun, parts []record.LevelRun, records [][]record.Record, span levelSpan, gaps func() time.Duration, interrupted bool) error {
	n := len(parts)
	name := "merge: " + LevelName(run)
	owner := map[int]int{} // arrival index → shard
	at := map[int]int64{}  // arrival index → Scheduled
	last := -1             // the largest index checked against the schedule (due, without gaps)
	var latest int64       // the latest Scheduled
	for i, recs := range records {
		first, count := parts[i].Shard.FirstWorker, parts[i].Shard.Workers
		for j := range recs {
			r := &recs[j]
			k := r.Seq
			switch {
			case k < 0 || k%n != i:
				return fmt.Errorf("%s: shard %d/%d recorded arrival %d, which is shard %d/%d's (index mod %d): not one schedule", name, i, n, k, ((k%n)+n)%n, n, n)
			case k >= n*(len(recs)+1):
				return fmt.Errorf("%s: shard %d/%d recorded arrival %d among %d records: its indices (%d, %d, …) cannot reach it: not one schedule", name, i, n, k, len(recs), i, i+n)
			case r.Worker != -1 && (r.Worker < first || r.Worker >= first+count):
				return fmt.Errorf("%s: shard %d/%d sent arrival %d in slot %d, outside its slots %d…%d: not one schedule", name, i, n, k, r.Worker, first, first+count-1)
			case r.Scheduled < span.start || r.Scheduled >= span.end:
				// Every arrival is due after the level's start and before its drain ends.
				return fmt.Errorf("%s: shard %d/%d's arrival %d is scheduled at %d, outside the level [%d, %d): not one schedule",
					name, i, n, k, r.Scheduled, span.start, span.end)
			}
			if o, dup := owner[k]; dup {
				return fmt.Errorf("%s: arrival %d recorded twice (shards %d/%d and %d/%d): not one schedule", name, k, o, n, i, n)
			}
			owner[k], at[k] = i, r.Scheduled
			latest = max(latest, r.Scheduled)
			if gaps != nil || r.Scheduled < span.loadEnd {
				last = max(last, k)
			}
		}
	}
	due := last + 1
	if gaps != nil {
		// Replay the schedule to the arrival after the last recorded: each recorded one must
		// be at its time, and every one before loadEnd is due.
		due = 0
		t := span.start
		for k := 0; k <= last+1; k++ {
			if k%replayCheckEvery == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			t += int64(gaps())
			if t < span.loadEnd {
				due = k + 1
			}
			if k > last {
				break
			}
			if t > latest && k < last {
				// The schedule is past every recorded time: arrival last cannot be on it.
				return fmt.Errorf("%s: shard %d/%d's arrival %d is scheduled at %d, before the schedule's arrival %d (%d): not one schedule",
					name, owner[last], n, last, at[last], k, t)
			}
			if got, ok := at[k]; ok && got != t {
				return fmt.Errorf("%s: shard %d/%d's arrival %d is scheduled at %d, the schedule's is %d (%v off): not one schedule",
					name, owner[k], n, k, got, t, time.Duration(got-t))
			}
		}
	}
	if interrupted {
		return nil
	}
	for k := range due {
		if _, ok := owner[k]; !ok {
			return fmt.Errorf("%s: arrival %d (shard %d/%d's) is missing, though every shard ran the level to its end: not one schedule", name, k, k%n, n)
		}
	}
	return nil
}

// fitArrivals measures how the merged send times of a rate level's sent arrivals (shards[i]
// shard i's records, on the reference clock; Worker ≥ 0) fit the arrival process a at rate requests/s: the gaps'
// CV and, but for the constant process, the one-sample Kolmogorov–Smirnov test against its
// gap distribution (ksTest). A send time is taken less the connection's set-up (Sent −
// ConnWait: when the client started the request, as its StartLag counts): a dial's round
// trips are the network's, not the shards' keeping of the schedule. Nil with fewer than 3
// sent arrivals, or when they were all sent in the same nanosecond.
func fitArrivals(shards [][]record.Record, a Arrival, rate float64) *record.ArrivalFit {
	var sent []int64
	for _, records := range shards {
		for i := range records {
			if r := &records[i]; r.Worker >= 0 {
				sent = append(sent, r.Sent-int64(r.ConnWait))
			}
		}
	}
	if len(sent) < 3 {
		return nil
	}
	sort.Slice(sent, func(i, j int) bool { return sent[i] < sent[j] })
	gaps := make([]float64, len(sent)-1)
	for i := range gaps {
		gaps[i] = float64(sent[i+1]-sent[i]) / 1e9
	}
	mean, sd := stat.MeanStdDev(gaps, nil)
	if !(mean > 0) || math.IsNaN(sd) {
		// Every send in one nanosecond (only a garbled file): no CV, and a NaN would stop
		// levels.json from being written.
		return nil
	}
	fit := &record.ArrivalFit{Process: string(a.process()), Count: len(gaps), CV: sd / mean}
	var cdf func(float64) float64
	switch a.process() {
	case ArrivalConstant:
		return fit
	case ArrivalGamma:
		k := a.shape()
		fit.ExpectedCV = 1 / math.Sqrt(k)
		cdf = distuv.Gamma{Alpha: k, Beta: k * rate}.CDF
	default:
		fit.ExpectedCV = 1
		cdf = distuv.Exponential{Rate: rate}.CDF
	}
	if d, p := ksTest(gaps, cdf); !math.IsNaN(d) && !math.IsNaN(p) {
		fit.KSD, fit.KSP = &d, &p
	}
	return fit
}

// ksAlpha is the level at which the merged send times' Kolmogorov–Smirnov test rejects the
// arrival process asked for (a warning: the shards did not send one schedule's times).
const ksAlpha = 0.01

// fitWarning warns when fit's KS test rejects the process at ksAlpha ("" otherwise): the
// sends bunched. It cannot blame the clocks: a shard schedules on the offset it measured and
// the merge shifts it back by that offset, so an error in it cancels out of the merged times
// (and a Poisson process shifted by a constant stays Poisson).
func fitWarning(run *record.LevelRun, fit *record.ArrivalFit) string {
	if fit == nil || fit.KSP == nil || !(*fit.KSP < ksAlpha) {
		return ""
	}
	return fmt.Sprintf("%s: the merged send times do not fit %s arrivals: Kolmogorov–Smirnov D = %.3g over %d gaps, p = %.2g < %g (CV %.3f, expected %.3f): the shards' sends bunched (a shard fell behind its schedule, or max_concurrency held arrivals back)",
		LevelName(run), fit.Process, *fit.KSD, fit.Count, *fit.KSP, ksAlpha, fit.CV, fit.ExpectedCV)
}

// shardLags is each shard's part of a merged rate or trace level: its sent arrivals, their
// schedule lag (Record.StartLag) and the clock offset its times were shifted by.
func shardLags(parts []record.LevelRun, records [][]record.Record) []record.ShardLag {
	out := make([]record.ShardLag, len(parts))
	for i, recs := range records {
		var lags []float64
		for j := range recs {
			if r := &recs[j]; r.Worker >= 0 {
				lags = append(lags, float64(r.StartLag()))
			}
		}
		sort.Float64s(lags)
		s := record.ShardLag{Index: i, Requests: len(lags)}
		if len(lags) > 0 {
			s.LagP50 = time.Duration(record.Percentile(lags, 50))
			s.LagP99 = time.Duration(record.Percentile(lags, 99))
		}
		if c := parts[i].Clock; c != nil {
			s.ClockOffset, s.ClockUncertainty = c.Offset, c.Uncertainty
		}
		out[i] = s
	}
	return out
}

// lagFar is how far above the other shards' a shard's p99 schedule lag must be, besides
// twice theirs, to be warned of: a scheduling hiccup of a few milliseconds is the p99 of a
// short level on any busy machine; a machine that falls behind its part of the schedule
// lags by tens.
const lagFar = 5 * time.Millisecond

// lagWarnings warns of each shard whose p99 schedule lag is far above the others': more
// than twice the median of the other shards' p99 and more than lagFar above it (its machine
// fell behind its part of the schedule).
func lagWarnings(run *record.LevelRun, lags []record.ShardLag) []string {
	var out []string
	for i, s := range lags {
		var others []float64
		for j, o := range lags {
			if j != i && o.Requests > 0 {
				others = append(others, float64(o.LagP99))
			}
		}
		if len(others) == 0 || s.Requests == 0 {
			continue
		}
		sort.Float64s(others)
		ref := time.Duration(record.Percentile(others, 50))
		if s.LagP99 > 2*ref && s.LagP99-ref > lagFar {
			out = append(out, fmt.Sprintf("%s: shard %d/%d's schedule lag p99 %s is far above the other shards' (%s): its machine fell behind its part of the schedule",
				LevelName(run), i, len(lags), s.LagP99.Round(10*time.Microsecond), ref.Round(10*time.Microsecond)))
		}
	}
	return out
}

// mergedRateNotes are a merged rate or trace level's notes on its cap and unsent arrivals,
// worded as one process's (rateNotes, the cap "max_concurrency c") from the union of the
// shards' records: an arrival waited when it has a SlotWait, or when it was never sent
// because issuing stopped while every slot was taken (from its scheduled time to the stop).
func mergedRateNotes(run *record.LevelRun, records []record.Record) []string {
	waited, longest := 0, time.Duration(0)
	for i := range records {
		switch r := &records[i]; {
		case r.Worker >= 0 && r.SlotWait > 0:
			waited++
			longest = max(longest, r.SlotWait)
		case r.Worker < 0 && r.Error == unsentNoSlot:
			waited++
			longest = max(longest, time.Duration(r.Sent-r.Scheduled))
		}
	}
	return rateNotes(fmt.Sprintf("max_concurrency %d", run.Concurrency), waited, len(records), longest, records)
}

// firstCompletion is when the first of records' sent requests completed (whatever its
// status), or MaxInt64 when none was sent.
func firstCompletion(records []record.Record) int64 {
	first := int64(math.MaxInt64)
	for i := range records {
		if r := &records[i]; r.Worker >= 0 {
			first = min(first, r.Done())
		}
	}
	return first
}

// startAfterFirstCompletion moves a rate level's W0 to the first slice boundary after its
// first completed request (whatever its status) when none had completed by the scheduled W0,
// and returns a note saying so (else ""). One process's rate level ends its warmup at the
// first completion, or at warmup_max (warmupMax > 0) from the level's start; a shard cannot
// know of the others'.
func startAfterFirstCompletion(run *record.LevelRun, records []record.Record, slice int64, warmupMax time.Duration) string {
	first := firstCompletion(records)
	if first <= run.W0 || first == math.MaxInt64 {
		return ""
	}
	if capAt := max(run.WarmupStart+int64(warmupMax), run.W0); warmupMax > 0 && first > capAt {
		return startWindowAfter(run, capAt, slice, fmt.Sprintf("warmup capped at warmup_max (%s): no request had completed", warmupMax))
	}
	return startWindowAfter(run, first, slice, "no request had completed by then (one process ends a rate level's warmup at its first completion)")
}

// passesNote notes that a trace level's window, the shards' whole passes, began before its
// first completion ("" when a request had completed by W0). One process would have started
// its passes then; the shards' passes were fixed by the schedule, and a part of them would
// not be whole passes, so the window stays.
func passesNote(run *record.LevelRun, records []record.Record) string {
	first := firstCompletion(records)
	if first <= run.W0 || first == math.MaxInt64 {
		return ""
	}
	return fmt.Sprintf("the window's first %s preceded the first completion (one process would have started its passes then; the shards' passes cannot move)",
		time.Duration(min(first, run.W1)-run.W0).Round(time.Millisecond))
}

// chooseRateWindowEnd ends a rate level's window as the one-process controller decides (its
// freeClock): W1 becomes the end of the shortest candidate window, among those it could have
// tested (chooseWindowEnd), with min_requests completions that realises the offered rate
// (record.RealizedWithin, its arrivals counted from the records' Scheduled) and passes the
// rate level's steady-state test (no CI); else W1 stays at the end of the load, with a note
// when that window did not realise the rate either.
func chooseRateWindowEnd(run *record.LevelRun, records []record.Record, proto Protocol, slice int64) string {
	var arrivals []int64
	for i := range records {
		if s := records[i].Scheduled; s != 0 {
			arrivals = append(arrivals, s)
		}
	}
	sort.Slice(arrivals, func(i, j int) bool { return arrivals[i] < arrivals[j] })
	realized := func(w1 int64) float64 {
		lo := sort.Search(len(arrivals), func(i int) bool { return arrivals[i] >= run.W0 })
		hi := sort.Search(len(arrivals), func(i int) bool { return arrivals[i] >= w1 })
		return float64(hi-lo) / record.WindowSeconds(run.W0, w1)
	}
	if chooseWindowEnd(run, records, proto, slice, realizedGateOf(realized, run.W0, slice, run.OfferedRPS)) {
		return ""
	}
	return realizedShort(realized, run.W0, run.W1, proto.MaxDuration, run.OfferedRPS)
}
