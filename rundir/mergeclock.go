package rundir

import (
	"fmt"
	"strings"
	"time"

	"github.com/kneecap/kneecap/record"
)

// clockTolerance is the most a shard's clock offset may be uncertain by, or drift by over the
// sweep, before the merge warns (DESIGN §8): a millisecond, small next to the latencies and
// the schedule lag a merged level reports.
const clockTolerance = int64(time.Millisecond)

// shiftOntoReference moves a shard's level (its phase boundaries and records) onto the
// sweep's reference clock: by −Offset of the clock reading the level ran on (none: 0).
func shiftOntoReference(run *record.LevelRun, records []record.Record) {
	c := run.Clock
	if c == nil || c.Offset == 0 {
		return
	}
	run.Shift(-c.Offset)
	for i := range records {
		records[i].Shift(-c.Offset)
	}
}

// clockWarnings are the merge's warnings on the shards' clock readings of the levels it
// merges (levels[i] shard i's, in level order): a reading uncertain by more than
// clockTolerance, a reading that failed (its level ran on the previous offset), a shard whose
// offsets drift by more than clockTolerance over the sweep; and, when no shard measured
// against a clock server but some recorded a reading, one that the merge trusts the shards'
// clocks, with what each kernel said of its synchronisation.
func clockWarnings(levels [][]record.LevelRun) []string {
	var out []string
	n := len(levels)
	measured, readings := false, false
	for i, runs := range levels {
		var lo, hi *record.LevelRun
		for j := range runs {
			l := &runs[j]
			c := l.Clock
			if c == nil {
				continue
			}
			readings = true
			if c.Server == "" {
				continue
			}
			measured = true
			where := fmt.Sprintf("shard %d/%d, level %d: clock", i, n, l.Index+1)
			switch {
			case c.Error != "":
				out = append(out, fmt.Sprintf("%s reading against %q failed (%q): the level ran on the previous offset, %s",
					where, c.Server, c.Error, offsetText(c.Offset)))
				continue
			case c.Uncertainty > clockTolerance:
				out = append(out, fmt.Sprintf("%s offset %s against %q is uncertain by ±%s, more than %s: its times may be off by that much",
					where, offsetText(c.Offset), c.Server, durText(c.Uncertainty), durText(clockTolerance)))
			}
			if lo == nil || c.Offset < lo.Clock.Offset {
				lo = l
			}
			if hi == nil || c.Offset > hi.Clock.Offset {
				hi = l
			}
		}
		if lo != nil && hi.Clock.Offset-lo.Clock.Offset > clockTolerance {
			out = append(out, fmt.Sprintf("shard %d/%d: its clock offset against %q drifted %s over the sweep (%s at level %d, %s at level %d), more than %s: its clock runs apart from the reference",
				i, n, hi.Clock.Server, durText(hi.Clock.Offset-lo.Clock.Offset), offsetText(lo.Clock.Offset), lo.Index+1,
				offsetText(hi.Clock.Offset), hi.Index+1, durText(clockTolerance)))
		}
	}
	if readings && !measured {
		kernels := make([]string, n)
		for i, runs := range levels {
			kernels[i] = fmt.Sprintf("shard %d/%d %s", i, n, ntpText(runs))
		}
		out = append(out, "no shard measured its clock against a clock server (--clock-server): the merge trusts the shards' clocks to agree (NTP); the kernels said: "+strings.Join(kernels, ", "))
	}
	return out
}

// ntpText says what a shard's kernel reported of its clock over its levels: the worst
// reading — unsynchronised at any level, else the largest estimated error.
func ntpText(runs []record.LevelRun) string {
	var worst *record.NTPState
	for _, l := range runs {
		c := l.Clock
		if c == nil || c.NTP == nil {
			continue
		}
		if s := c.NTP; worst == nil || worst.Synced && (!s.Synced || s.EstError > worst.EstError) {
			worst = s
		}
	}
	switch {
	case worst == nil:
		return "no NTP state"
	case !worst.Synced:
		return "unsynchronised"
	}
	return fmt.Sprintf("synchronised, estimated error %s", durText(worst.EstError))
}

// offsetText formats a clock offset in milliseconds with its sign: "+50.012 ms".
func offsetText(ns int64) string { return fmt.Sprintf("%+.3f ms", float64(ns)/1e6) }

// durText formats a non-negative span in milliseconds: "1.400 ms".
func durText(ns int64) string { return fmt.Sprintf("%.3f ms", float64(ns)/1e6) }
