package sweep

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Schedule fixes every level of a sweep to the wall clock, so that several load generators
// (the shards of ShardConfig) run the same level at the same time without talking to each
// other. Level k (from 0) starts at Start + k × Period; its warmup lasts exactly Warmup and the load
// runs for the longest window, max(Duration, MaxDuration), then requests in flight
// DrainTimeout later are cancelled. No shard can tell alone whether the level is steady, so
// rundir.Merge chooses the window afterwards exactly as one process would have: the shortest
// window of at least Duration (whole slices) with MinRequests completions that passes the
// steady-state test on the union of the shards' records. Stop rules other than the budget
// cannot be agreed on and are not applied.
type Schedule struct {
	// Start is when level 0 starts on every shard.
	Start time.Time
	// Shard and Shards say which part of each level's workers this process runs.
	Shard, Shards int
}

// ScheduleSlack is added to every level of a schedule after its drain, for writing the level's
// records and results before the next level is due.
const ScheduleSlack = time.Second

// Period is the time between the starts of two levels: warmup + the longest window +
// drain_timeout + cooldown + ScheduleSlack.
func (s *Schedule) Period(p Protocol) time.Duration {
	return p.Warmup + scheduledWindow(p) + p.DrainTimeout + p.Cooldown + ScheduleSlack
}

// LevelEnd is when level k's drain ends at the latest: its load ends drain_timeout before.
func (s *Schedule) LevelEnd(p Protocol, k int) time.Time {
	return s.LevelStart(p, k).Add(p.Warmup + scheduledWindow(p) + p.DrainTimeout)
}

// scheduledWindow is how long a shard loads the server after warmup: the longest window the
// one-process controller measures, max_duration (at least duration) in whole slices.
func scheduledWindow(p Protocol) time.Duration {
	slice := p.Duration / MinSlices
	if slice <= 0 {
		return p.Duration
	}
	return slice * time.Duration(maxSlices(p))
}

// maxSlices is the longest window in slices of duration ÷ MinSlices: max_duration, at least
// MinSlices (duration). p.Duration must be at least MinSlices nanoseconds.
func maxSlices(p Protocol) int {
	return max(MinSlices, int(p.MaxDuration/(p.Duration/MinSlices)))
}

// LevelStart is when level k starts.
func (s *Schedule) LevelStart(p Protocol, k int) time.Time {
	return s.Start.Add(time.Duration(k) * s.Period(p))
}

// Workers returns the workers of a level of concurrency c that shard i of n runs:
// first, first+1, …, first+count-1. The shards' ranges tile 0 … c-1 in order and differ in
// size by at most one.
func Workers(c, i, n int) (first, count int) {
	first = i * c / n
	return first, (i+1)*c/n - first
}

// ShardPart describes a shard's part of a level (LevelRun.Shard).
type ShardPart struct {
	// Index and Count are the shard's number and the number of shards.
	Index int `json:"index"`
	Count int `json:"count"`
	// FirstWorker and Workers are the shard's workers: FirstWorker … FirstWorker+Workers-1
	// of the level's Concurrency.
	FirstWorker int `json:"first_worker"`
	Workers     int `json:"workers"`
}

// warmupLateNote starts a shard's note that some of its workers had not completed a request
// by the scheduled end of warmup (the merge then starts the window later: see mergeLevel).
const warmupLateNote = "at the scheduled end of warmup"

// mergeLevel merges the shards' parts of one level (parts in shard order) with the union of
// their records, which it sorts by send time. server summarises a shard's server metrics over
// a window.
func MergeLevel(parts []LevelRun, records []Record, proto Protocol, server func(shard int, w0, w1 int64) (*ServerStats, error)) (LevelRun, error) {
	p0 := parts[0]
	ref := -1 // the first shard that ran the level to its scheduled end: the others must agree
	for i, p := range parts {
		if !p.Interrupted {
			ref = i
			break
		}
	}
	name := fmt.Sprintf("merge: level %d (concurrency %d)", p0.Index+1, p0.Concurrency)
	run := LevelRun{
		Index: p0.Index, Concurrency: p0.Concurrency,
		WarmupStart: p0.WarmupStart, W0: p0.W0, W1: p0.W1, DrainEnd: p0.DrainEnd,
	}
	interrupted := false
	next := 0 // the next worker the shards' ranges must cover
	var boundWhy []string
	var cs *ClientStats
	for i, p := range parts {
		if p.Index != p0.Index || p.Concurrency != p0.Concurrency {
			return run, fmt.Errorf("%s: shard %d/%d has level %d at concurrency %d here", name, i, len(parts), p.Index+1, p.Concurrency)
		}
		if p.Shard == nil || p.Shard.Index != i || p.Shard.FirstWorker != next {
			return run, fmt.Errorf("%s: shard %d/%d's part does not continue the workers at %d", name, i, len(parts), next)
		}
		next += p.Shard.Workers
		interrupted = interrupted || p.Interrupted
		run.WarmupStart = min(run.WarmupStart, p.WarmupStart)
		run.DrainEnd = max(run.DrainEnd, p.DrainEnd)
		run.W0 = max(run.W0, p.W0)
		run.W1 = min(run.W1, p.W1)
		run.Cancelled += p.Cancelled
		if r := parts[max(ref, 0)]; !p.Interrupted && (p.W0 != r.W0 || p.W1 != r.W1) {
			return run, fmt.Errorf("%s: shard %d/%d's window [%d, %d) differs from shard %d/%d's [%d, %d): not one schedule",
				name, i, len(parts), p.W0, p.W1, ref, len(parts), r.W0, r.W1)
		}
		// Client diagnostics cover each shard's whole load period, not only the merged
		// window: CPU and scheduling latency are not kept per slice.
		if c := p.Client; c != nil {
			if cs == nil {
				cs = &ClientStats{}
			}
			cs.CPUUtilization = max(cs.CPUUtilization, c.CPUUtilization)
			cs.SchedLatencyP99 = max(cs.SchedLatencyP99, c.SchedLatencyP99)
			cs.RunQueueDelay = max(cs.RunQueueDelay, c.RunQueueDelay)
			if c.Bound {
				boundWhy = append(boundWhy, fmt.Sprintf("shard %d/%d: %s", i, len(parts), c.Reason))
			}
		}
	}
	if next != p0.Concurrency {
		return run, fmt.Errorf("%s: the shards run %d workers, not %d", name, next, p0.Concurrency)
	}
	run.W1 = max(run.W1, run.W0)
	sort.SliceStable(records, func(a, b int) bool { return records[a].Sent < records[b].Sent })
	var notes []string
	if run.Cancelled > 0 {
		notes = append(notes, fmt.Sprintf("%d requests still in flight at the scheduled end of the drain were cancelled", run.Cancelled))
	}
	end := endNormal
	if interrupted {
		end = endInterrupt
	}
	slice := int64(proto.Duration) / MinSlices
	if !interrupted {
		// One process ends its warmup only when every worker has completed a request; a
		// shard cannot wait for the others, so the window starts at the first slice boundary
		// after the last worker's first completion (its first request, whatever its status).
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
		if late > 0 {
			w0 := min(run.W0+(last-run.W0+slice-1)/slice*slice, run.W1)
			notes = append(notes, fmt.Sprintf("window starts %s after the scheduled end of warmup: %d of %d workers had not completed a request by then (one process extends its warmup until every worker has)",
				time.Duration(w0-run.W0), late, p0.Concurrency))
			run.W0 = w0
		}
	}
	if kmax := int((run.W1 - run.W0) / slice); !interrupted && kmax >= MinSlices {
		// The shards loaded the server for the longest window; the window is the shortest
		// steady one with min_requests completions, as the one-process controller decides,
		// among the windows it could have tested: those ending before the oldest request in
		// flight when its longest window ended (its horizon then).
		horizon := run.W1
		for i := range records {
			if r := &records[i]; r.Sent < run.W1 && r.Done() > run.W1 {
				horizon = min(horizon, r.Sent)
			}
		}
		win := newWindow(run.W0, slice, MinSlices, kmax)
		for i := range records {
			win.add(&records[i])
		}
		if k := win.decide(horizon, proto.MinRequests, proto.CITarget); k > 0 {
			run.W1 = run.W0 + slice*int64(k)
		}
	}
	setPhases(records, run.W0, run.W1)
	for i, p := range parts {
		if p.Server == nil {
			continue
		}
		run.Server = p.Server
		if p.W0 != run.W0 || p.W1 != run.W1 {
			st, err := server(i, run.W0, run.W1)
			switch {
			case err != nil:
				notes = append(notes, fmt.Sprintf("server metrics over shard %d/%d's whole load period (re-reading them failed: %v)", i, len(parts), err))
			case st != nil:
				st.Series = p.Server.Series // the file does not record them
				run.Server = st
			}
		}
		break
	}
	notes = append(notes, finishWindow(&run, records, proto, slice, end)...)
	if cs != nil && run.W1 > run.W0 {
		cs.ConnWaitP99 = connWaitP99(records, run.W0, run.W1)
		cs.classify()
		if len(boundWhy) > 0 {
			if cs.Reason != "" {
				boundWhy = append([]string{"merged: " + cs.Reason}, boundWhy...)
			}
			cs.Bound, cs.Reason = true, strings.Join(boundWhy, "; ")
		}
		run.Client = cs
		if cs.Bound {
			notes = append(notes, "client-bound: "+cs.Reason+"; the numbers may describe the load generator, not the server")
		}
	}
	run.Notes = notes
	return run, nil
}
