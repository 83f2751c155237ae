package sweep

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"github.com/kneecap/kneecap/workload"
)

// MergeLevel merges the shards' parts of one level of a sharded sweep (parts in shard order,
// one LevelRun each, as its shard ran it on the Schedule; records[i] shard i's records, both
// on the reference clock: shifted by −ClockOffset.Offset) into the level one process would
// have run with every worker, its records the union of the shards', sorted by send time, each
// in the phase of the merged window.
//
// rec re-reads shard i's server metrics and GPU readings over a window [w0, w1) on the
// reference clock; it is called only when the merged window differs from the shard's. ctx
// ends the schedule's replay early (its error is returned). replay replays a rate or trace
// level's global schedule (nil: its scheduled times are not checked). The warnings are the
// level's findings the merge must tell (they are in its notes too).
//
// The parts must be one level of one schedule: the same index and concurrency (and offered
// rate and time scale), worker ranges that continue each other in shard order and cover the
// concurrency, and the same window on every shard that ran it to its end; a rate or trace
// level's records must be one schedule (checkSchedule); anything else is an error. A level
// that any shard ran interrupted stays interrupted, with the common part of the shards'
// windows. Otherwise the window is chosen as the one-process controller chooses it. A
// closed-loop level's starts at the scheduled end of warmup, or at the first slice boundary
// after the last worker's first completion when some worker had not completed a request by
// then (one process extends its warmup until every worker has), and ends at the shortest
// steady window with min_requests completions among those the controller could have tested,
// else at the end of the load period. A rate level's starts at its first completion instead
// (startAfterFirstCompletion) and its window must also realise the offered rate
// (chooseRateWindowEnd); a trace level's window stays the shards' whole passes (noted when
// they began before the first completion). The verdict,
// slice TPS and notes are then computed from the union as for one process. Client
// diagnostics take the worst shard (the level is client-bound when any shard was); server
// metrics and GPU telemetry come from the lowest-numbered shard that read them (mergeGPU).
func MergeLevel(ctx context.Context, parts []record.LevelRun, records [][]record.Record, proto Protocol, rec Recordings, replay *Replay) (record.Level, []string, error) {
	if err := checkWindows(parts, proto); err != nil {
		return record.Level{}, nil, err
	}
	m, err := mergeParts(parts)
	run := m.run
	if err != nil {
		return record.Level{}, nil, err
	}
	rate := run.Mode().IsRate()
	if m.apart != nil {
		return record.Level{}, nil, checkApart(ctx, &run, parts, records, proto, replay, m.apart)
	}
	all := slices.Concat(records...)
	var warnings []string
	if !rate {
		// No schedule to lag behind: each shard's requests and the offset applied to them.
		run.Shards = shardLags(parts, records)
	} else {
		if warnings, err = rateFindings(ctx, &run, parts, records, proto, replay, m.interrupted); err != nil {
			return record.Level{}, nil, err
		}
	}
	notes := slices.Clone(warnings)
	if rate {
		notes = append(notes, mergedRateNotes(&run, all)...)
		notes = append(notes, replay.passNote(&run, proto)...)
	}
	sort.SliceStable(all, func(a, b int) bool { return all[a].Sent < all[b].Sent })
	if run.Cancelled > 0 {
		notes = append(notes, fmt.Sprintf("%d requests still in flight at the scheduled end of the drain were cancelled", run.Cancelled))
	}
	if run.TimeScale > 0 && run.W1 > run.W0 {
		// A trace level's window is its whole passes (traceLevelProtocol): its slices are
		// tenths of it, as one process's.
		proto.Duration, proto.MaxDuration = time.Duration(run.W1-run.W0), time.Duration(run.W1-run.W0)
	}
	slice := int64(proto.Duration) / record.MinSlices
	end := endNormal
	if m.interrupted {
		end = endInterrupt
	} else {
		notes = append(notes, chooseWindow(&run, all, proto, slice)...)
	}
	record.SetPhases(all, run.W0, run.W1)
	notes = append(notes, mergeServer(&run, parts, rec.Server)...)
	notes = append(notes, mergeGPU(&run, parts, rec.GPU)...)
	notes = append(notes, finishWindow(&run, all, proto, slice, end)...)
	if cs := m.client; cs != nil && run.W1 > run.W0 {
		selfcheck.JudgeClient(cs, all, run.W0, run.W1, rate, proto.ClientTolerance)
		if len(m.boundWhy) > 0 {
			why := m.boundWhy
			if cs.Reason != "" {
				why = append([]string{"merged: " + cs.Reason}, why...)
			}
			cs.Bound, cs.Reason = true, strings.Join(why, "; ")
		}
		run.Client = cs
		if cs.Bound {
			notes = append(notes, selfcheck.ClientBoundNote(cs))
		}
		if cs.Note != "" {
			notes = append(notes, cs.Note)
		}
	}
	run.Notes = notes
	return record.Level{Run: run, Records: all}, warnings, nil
}

// checkWindows refuses a rate or closed-loop level's part whose window is longer than the
// schedule's (max_duration): it is not the sweep's, and would size the merged window's
// slices by what the file says. A trace level's window is its whole passes, unbounded here.
func checkWindows(parts []record.LevelRun, proto Protocol) error {
	w := scheduledWindow(proto)
	for i, p := range parts {
		if p.TimeScale == 0 && p.W1-p.W0 > int64(w) {
			return fmt.Errorf("merge: %s: shard %d/%d's window [%d, %d) is longer than the schedule's %v: not one schedule",
				LevelName(&p), i, len(parts), p.W0, p.W1, w)
		}
	}
	return nil
}

// checkApart returns apart (ErrEndedApart's) for a level whose shards ended it apart only
// when its parts are otherwise one schedule: a rate or trace level's records are
// (checkSchedule, as for an interrupted level: the early shard's later arrivals are not due),
// and no part's window ends later than the schedule's end of a rate or closed-loop level's
// window (by more than half a warmup: a shard that starts later stops). Else a garbled file
// would be taken for the server's death; the schedule's error is returned instead.
func checkApart(ctx context.Context, run *record.LevelRun, parts []record.LevelRun, records [][]record.Record, proto Protocol, replay *Replay, apart error) error {
	if run.Mode().IsRate() {
		if _, err := rateFindings(ctx, run, parts, records, proto, replay, true); err != nil {
			return err
		}
	}
	if replay == nil || replay.Schedule == nil || run.TimeScale > 0 {
		return apart
	}
	end := replay.Schedule.LevelStart(proto, run.Index).Add(proto.Warmup + scheduledWindow(proto)).UnixNano()
	for i, p := range parts {
		if p.W1 > end+int64(proto.Warmup/2) {
			return fmt.Errorf("merge: %s: shard %d/%d's window ends at %d, after the schedule's end %d: not one schedule",
				LevelName(run), i, len(parts), p.W1, end)
		}
	}
	return apart
}

// rateFindings checks that a rate or trace level's records (records[i] shard i's) are one
// schedule (checkSchedule, replayed from the level's scheduled start) and
// records in run how the merged send times fit the arrival process (a rate level's,
// fitArrivals) and each shard's part (shardLags); it returns the warnings on them. A rate or
// time scale kneecap would not run is refused before anything is replayed.
func rateFindings(ctx context.Context, run *record.LevelRun, parts []record.LevelRun, records [][]record.Record, proto Protocol, replay *Replay, interrupted bool) ([]string, error) {
	if run.TimeScale > 0 {
		if errs := workload.ValidateTimeScales("time scale", []float64{run.TimeScale}); len(errs) > 0 {
			return nil, fmt.Errorf("merge: level %d: %v: not one schedule", run.Index+1, errs[0])
		}
	} else if why := rateProblem(run.OfferedRPS); why != "" {
		return nil, fmt.Errorf("merge: level %d: offered rate %g %s: not one schedule", run.Index+1, run.OfferedRPS, why)
	}
	if err := checkSchedule(ctx, run, parts, records, spanOf(run, proto, replay), replay.gaps(run), interrupted); err != nil {
		return nil, err
	}
	if run.TimeScale == 0 && replay != nil {
		run.Arrivals = fitArrivals(records, replay.Arrival, run.OfferedRPS)
	}
	run.Shards = shardLags(parts, records)
	warnings := lagWarnings(run, run.Shards)
	if w := fitWarning(run, run.Arrivals); w != "" {
		warnings = append(warnings, w)
	}
	return warnings, nil
}

// spanOf is where rate or trace level run's arrivals lie on the reference clock (levelSpan):
// from its scheduled start to the end of its drain, by the protocol (a trace level's: whole
// passes of replay's trace). Without a schedule, or a trace level without its trace, nothing
// is replayed, and the span is [0, the latest of the shards' drain ends).
func spanOf(run *record.LevelRun, proto Protocol, replay *Replay) levelSpan {
	span := levelSpan{end: run.DrainEnd, loadEnd: run.W1}
	if replay == nil || replay.Schedule == nil {
		return span
	}
	span.start = replay.Schedule.LevelStart(proto, run.Index).UnixNano()
	q := proto
	if run.TimeScale > 0 {
		if replay.Trace == nil {
			return span
		}
		q, _ = traceLevelProtocol(replay.Trace, proto, run.TimeScale, true)
	}
	span.end = span.start + int64(q.Warmup+scheduledWindow(q)+q.DrainTimeout)
	return span
}

// chooseWindow chooses the window of a level every shard ran to its end (records sorted by
// send time) as one process would, and returns the notes on how: a closed loop's warmup ends
// when every worker has completed a request, a rate level's at its first completion; a closed
// loop's or rate level's window ends as the controller decides (a rate level's must also
// realise the offered rate); a trace level's stays its whole passes, with a note when they
// began before its first completion.
func chooseWindow(run *record.LevelRun, records []record.Record, proto Protocol, slice int64) []string {
	var notes []string
	add := func(note string) {
		if note != "" {
			notes = append(notes, note)
		}
	}
	switch {
	case run.TimeScale > 0:
		add(passesNote(run, records))
	case run.Mode().IsRate():
		add(startAfterFirstCompletion(run, records, slice, proto.WarmupMax))
		add(chooseRateWindowEnd(run, records, proto, slice))
	default:
		add(startAfterFirstRequests(run, records, slice, proto.WarmupMax))
		chooseWindowEnd(run, records, proto, slice, nil)
	}
	return notes
}

// mergedParts is what the shards' parts of a level say together.
type mergedParts struct {
	// run has the level's identity, the union of the shards' load periods, the common part
	// of their windows and the sum of their cancelled requests.
	run         record.LevelRun
	interrupted bool                // some shard ran the level interrupted
	client      *record.ClientStats // the worst shard's CPU, scheduling and run-queue figures
	boundWhy    []string            // "shard i/n: reason" of every client-bound shard
	apart       error               // ErrEndedApart's (endedApart) when the shards ended the level apart
}

// mergeParts checks that parts are one level of one schedule and combines them.
func mergeParts(parts []record.LevelRun) (mergedParts, error) {
	p0 := parts[0]
	ref := -1 // the first shard that ran the level to its scheduled end: the others must agree
	for i, p := range parts {
		if !p.Interrupted {
			ref = i
			break
		}
	}
	name := "merge: " + LevelName(&p0)
	m := mergedParts{run: record.LevelRun{
		Index: p0.Index, Concurrency: p0.Concurrency, OfferedRPS: p0.OfferedRPS, TimeScale: p0.TimeScale,
		WarmupStart: p0.WarmupStart, W0: p0.W0, W1: p0.W1, DrainEnd: p0.DrainEnd,
	}}
	run := &m.run
	next := 0 // the next worker the shards' ranges must cover
	for i, p := range parts {
		if p.Index != p0.Index || p.Concurrency != p0.Concurrency {
			return m, fmt.Errorf("%s: shard %d/%d has level %d at concurrency %d here", name, i, len(parts), p.Index+1, p.Concurrency)
		}
		if p.OfferedRPS != p0.OfferedRPS || p.TimeScale != p0.TimeScale {
			return m, fmt.Errorf("%s: shard %d/%d has %s here: not one schedule", name, i, len(parts), LevelName(&p))
		}
		if p.Shard == nil || p.Shard.Index != i || p.Shard.FirstWorker != next {
			return m, fmt.Errorf("%s: shard %d/%d's part does not continue the workers at %d", name, i, len(parts), next)
		}
		next += p.Shard.Workers
		m.interrupted = m.interrupted || p.Interrupted
		// One bound for every shard (record.ChunkBound); shards from a kneecap that bounded
		// them apart keep the most generous, which disbelieves nothing a shard believed.
		run.TokensPerChunkBound = max(run.TokensPerChunkBound, p.TokensPerChunkBound)
		run.WarmupStart = min(run.WarmupStart, p.WarmupStart)
		run.DrainEnd = max(run.DrainEnd, p.DrainEnd)
		run.W0 = max(run.W0, p.W0)
		run.W1 = min(run.W1, p.W1)
		run.Cancelled += p.Cancelled
		if r := parts[max(ref, 0)]; !p.Interrupted && (p.W0 != r.W0 || p.W1 != r.W1) {
			if err := endedApart(name, parts, i, ref); err != nil {
				m.apart = cmp.Or(m.apart, err)
				continue
			}
			return m, fmt.Errorf("%s: shard %d/%d's window [%d, %d) differs from shard %d/%d's [%d, %d): not one schedule",
				name, i, len(parts), p.W0, p.W1, ref, len(parts), r.W0, r.W1)
		}
		// Client diagnostics cover each shard's whole load period, not only the merged
		// window: CPU and scheduling latency are not kept per slice.
		if c := p.Client; c != nil {
			if m.client == nil {
				m.client = &record.ClientStats{}
			}
			m.client.CPUUtilization = max(m.client.CPUUtilization, c.CPUUtilization)
			m.client.SchedLatencyP99 = max(m.client.SchedLatencyP99, c.SchedLatencyP99)
			m.client.RunQueueDelay = max(m.client.RunQueueDelay, c.RunQueueDelay)
			if c.Bound {
				m.boundWhy = append(m.boundWhy, fmt.Sprintf("shard %d/%d: %s", i, len(parts), c.Reason))
			}
		}
	}
	if next != p0.Concurrency {
		return m, fmt.Errorf("%s: the shards run %d workers, not %d", name, next, p0.Concurrency)
	}
	run.W1 = max(run.W1, run.W0)
	return m, nil
}

// ErrEndedApart is MergeLevel's error for a level whose shards ended their windows at
// different moments, though none was interrupted: one ended it early, the server having
// stopped answering (or ignored max_tokens), and each shard saw that at its own moment. Its
// parts cannot be joined; the merge leaves the level out with a warning.
var ErrEndedApart = errors.New("the shards ended the level at different moments")

// endedApart is ErrEndedApart for parts i and ref, whose windows differ, naming the one that
// ended first and why, when that one recorded the server's death (deadReason) and its window
// is an early end of the other's: the same start and an earlier end (the server died in its
// window), or W0 = W1 after its level began and before the other's end (in its warmup,
// whose end is then the moment it ended). Else nil: the windows are not one schedule.
func endedApart(name string, parts []record.LevelRun, i, ref int) error {
	early, other := i, ref
	if parts[ref].W1 < parts[i].W1 {
		early, other = ref, i
	}
	e, o := &parts[early], &parts[other]
	if !deadReason(e.NotSteadyReason) || e.W1 >= o.W1 || e.W1 < e.WarmupStart || (e.W0 != o.W0 && e.W0 != e.W1) {
		return nil
	}
	return fmt.Errorf("%s: shard %d/%d ended its window %s before shard %d/%d (%s): %w", name, early, len(parts),
		time.Duration(o.W1-e.W1), other, len(parts), e.NotSteadyReason, ErrEndedApart)
}

// startAfterFirstRequests moves W0 to the first slice boundary after the last worker's first
// completion (its first request, whatever its status) when some worker had not completed a
// request by the scheduled W0, and returns a note saying so (else ""). One process ends its
// warmup only when every worker has completed a request, or at warmup_max (warmupMax > 0)
// from the level's start; a shard cannot wait for the others.
func startAfterFirstRequests(run *record.LevelRun, records []record.Record, slice int64, warmupMax time.Duration) string {
	first := map[int]int64{}
	for i := range records {
		if r := &records[i]; r.Seq == 0 {
			first[r.Worker] = r.Done()
		}
	}
	late, last := 0, run.W0
	for _, d := range first {
		if d > run.W0 {
			late++
			last = max(last, d)
		}
	}
	if late == 0 {
		return ""
	}
	if capAt := max(run.WarmupStart+int64(warmupMax), run.W0); warmupMax > 0 && last > capAt {
		done := 0
		for _, d := range first {
			if d <= capAt {
				done++
			}
		}
		return startWindowAfter(run, capAt, slice, fmt.Sprintf("warmup capped at warmup_max (%s): %d of %d workers had completed a request", warmupMax, done, run.Concurrency))
	}
	return startWindowAfter(run, last, slice, fmt.Sprintf("%d of %d workers had not completed a request by then (one process extends its warmup until every worker has)",
		late, run.Concurrency))
}

// startWindowAfter moves run's W0 to the first slice boundary at or after t (at most W1),
// the moment one process's warmup would have ended, and returns the note saying so: "window
// starts … after the scheduled end of warmup: " and why.
func startWindowAfter(run *record.LevelRun, t, slice int64, why string) string {
	w0 := min(run.W0+(t-run.W0+slice-1)/slice*slice, run.W1)
	note := fmt.Sprintf("window starts %s after the scheduled end of warmup: %s", time.Duration(w0-run.W0), why)
	run.W0 = w0
	return note
}

// chooseWindowEnd ends the window as the one-process controller decides: the shards loaded
// the server for the longest window, and W1 becomes the end of the shortest steady one with
// min_requests completions (and meeting gate, when set) among the windows the controller
// could have tested, those ending before the oldest request in flight when its longest
// window ended (its horizon then); it reports whether one was. When none is, or the load
// period holds fewer than MinSlices slices, W1 stays.
func chooseWindowEnd(run *record.LevelRun, records []record.Record, proto Protocol, slice int64, gate func(k int) bool) bool {
	kmax := int((run.W1 - run.W0) / slice)
	if kmax < record.MinSlices {
		return false
	}
	horizon := run.W1
	for i := range records {
		if r := &records[i]; r.Sent < run.W1 && r.Done() > run.W1 {
			horizon = min(horizon, r.Sent)
		}
	}
	win := newWindow(run.W0, slice, record.MinSlices, kmax)
	win.rate, win.accept = run.Mode().IsRate(), gate
	for i := range records {
		win.add(&records[i])
	}
	if k := win.decide(horizon, proto.MinRequests, proto.CITarget); k > 0 {
		run.W1 = run.W0 + slice*int64(k)
		return true
	}
	return false
}

// Recordings re-read what a shard recorded beside its requests over another window (the merged
// one): its server metrics (server_metrics.jsonl) and its GPU readings (gpu_metrics.jsonl),
// summarised as during the sweep; nil and no error when the shard recorded none.
type Recordings struct {
	Server func(shard int, w0, w1 int64) (*record.ServerStats, error)
	GPU    func(shard int, w0, w1 int64) (*record.GPUStats, error)
}

// mergeServer sets run.Server from the lowest-numbered shard that scraped server metrics,
// summarised again over the merged window when it differs from the shard's, and returns a
// note when that failed.
func mergeServer(run *record.LevelRun, parts []record.LevelRun, server func(shard int, w0, w1 int64) (*record.ServerStats, error)) []string {
	for i, p := range parts {
		if p.Server == nil {
			continue
		}
		run.Server = p.Server
		if p.W0 == run.W0 && p.W1 == run.W1 {
			return nil
		}
		st, err := server(i, run.W0, run.W1)
		switch {
		case err != nil:
			return []string{fmt.Sprintf("server metrics over shard %d/%d's whole load period (re-reading them failed: %v)", i, len(parts), err)}
		case st != nil:
			st.Series = p.Server.Series // the file does not record them
			run.Server = st
		}
		return nil
	}
	return nil
}
