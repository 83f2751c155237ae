package live

import (
	"fmt"
	"time"
)

// sweepETA estimates how far a sweep has come and the time it has left from its plan: every
// level not yet finished lasts warmup + duration (its window longer only once it runs longer:
// an extended window), with the cooldown before each level still to start. The fraction shown
// never goes backwards (it is the largest computed so far) and stays below 100% while a level
// runs. With --rates auto it is one estimate for the probe's levels and the rate levels after.
type sweepETA struct {
	// level is a level's planned length (warmup + duration); cooldown the pause before a level.
	level, cooldown time.Duration
	// start is when this process started its first level (zero before); levelStart when the
	// running level started.
	start, levelStart time.Time
	// after is the number of levels still to start after the running one (planned levels and
	// the most sweep.refine may add).
	after int
	// later is the planned time of what follows these levels: the rate levels, while the
	// --rates auto probe runs.
	later time.Duration
	// shown is the largest fraction returned.
	shown float64
}

// newSweepETA returns the estimate for levels of protocol warmup, duration and cooldown.
func newSweepETA(warmup, duration, cooldown time.Duration) *sweepETA {
	return &sweepETA{level: warmup + duration, cooldown: cooldown}
}

// then returns s for the levels that follow the --rates auto probe, of warmup, duration and
// cooldown: one estimate from the probe's start to the sweep's end, whose fraction goes on
// from the probe's.
func (s *sweepETA) then(warmup, duration, cooldown time.Duration) *sweepETA {
	s.level, s.cooldown, s.later = warmup+duration, cooldown, 0
	return s
}

// started records that a level started at now with after levels still to come after it.
func (s *sweepETA) started(now time.Time, after int) {
	if s.start.IsZero() {
		s.start = now
	}
	s.levelStart = now
	s.after = max(0, after)
}

// at returns the fraction of the sweep done with the running level elapsed into (the levels
// before it took what they took), and the time left: the running level's planned rest plus
// the later levels' lengths and cooldowns, and what follows them (later).
func (s *sweepETA) at(elapsed time.Duration) (float64, time.Duration) {
	left := max(0, s.level-elapsed) + time.Duration(s.after)*(s.cooldown+s.level) + s.later
	done := max(0, s.levelStart.Sub(s.start)+elapsed)
	f := 1.0
	if done+left > 0 {
		f = float64(done) / float64(done+left)
	}
	s.shown = max(s.shown, min(f, 0.99)) // 100% is for the end, which the line does not show
	return s.shown, left
}

// etaString formats a time left for the status line: "45s", "3m05s", "1h02m".
func etaString(d time.Duration) string {
	d = d.Round(time.Second)
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	case d >= time.Minute:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%ds", int(d.Seconds()))
}
