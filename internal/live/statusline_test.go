package live

// The status line at every width: fields left out whole, never a number cut or without its
// unit; the rate-mode line with its TTFT and live rate at 80 columns; the --rates auto probe
// and the rate levels as one progress.

import (
	"bytes"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// statusUnits are the whole fields a status line may show, each a value with its unit.
var statusUnits = regexp.MustCompile(`^(level \d+/\d+|added \d+/\d+|retry|probe|c=\d+|[0-9.e+]+ req/s|` +
	`(warmup|measure|drain) (\d+s|\d+m\d\ds|\d+h\d\dm)|sweep \d+%|ETA (\d+s|\d+m\d\ds|\d+h\d\dm)|` +
	`[0-9.e+]+ tok/s|TTFT p50 [0-9.]+(ms|s)|\d+ done)$`)

// statusSeparators split a status line into its fields.
var statusSeparators = regexp.MustCompile(`  | · |, `)

// statusCase is a status line to fit: a display and its live numbers.
type statusCase struct {
	name  string
	setup func(p *Display)
	s     sweep.LiveStats
}

// statusCases are status lines of a closed-loop level, a rate level, an added and a retried
// level, a probe level and a warmup, with small and large numbers.
func statusCases() []statusCase {
	big := sweep.LiveStats{Index: 9, Concurrency: 512, Phase: record.PhaseMeasure, Elapsed: 2 * time.Hour,
		OutputTPS: 123456.7, TTFTP50: 12345 * time.Millisecond, Completed: 1234567}
	small := sweep.LiveStats{Index: 1, Concurrency: 4, Phase: record.PhaseMeasure, Elapsed: 7 * time.Second,
		OutputTPS: 639.3, TTFTP50: 14100 * time.Microsecond, Completed: 123}
	rate := func(p *Display) { p.rates = []float64{5, 12.5, 20, 40, 80, 160, 320, 640, 1280, 1234.5} }
	bigRate := big
	bigRate.OfferedRPS = 1234.5
	smallRate := small
	smallRate.OfferedRPS = 12.5
	added := smallRate
	added.Index, added.OfferedRPS = 10, 10.35
	retry := small
	retry.Index = 10
	warm := small
	warm.Phase, warm.Completed, warm.OutputTPS, warm.TTFTP50 = record.PhaseWarmup, 0, 0, 0
	return []statusCase{
		{"concurrency large", nil, big},
		{"concurrency", nil, small},
		{"rate large", rate, bigRate},
		{"rate", rate, smallRate},
		{"added rate", func(p *Display) { rate(p); p.current, p.added, p.refine = true, 1, 2 }, added},
		{"retry", nil, retry},
		{"probe", func(p *Display) { p.probe = true }, small},
		{"warmup", rate, warm},
	}
}

// TestStatusLineWholeFields: at every width from 40 to 200 columns the status line is shorter
// than the terminal and made of whole fields of the full line, in its order, each a value with
// its unit; a narrower terminal shows a subset of a wider one's fields (fields are left out
// whole, never cut).
func TestStatusLineWholeFields(t *testing.T) {
	t.Parallel()
	for _, tc := range statusCases() {
		p := newDisplay(&bytes.Buffer{}, true, []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512}, config.Default().Sweep)
		if tc.setup != nil {
			tc.setup(p)
		}
		var full []string
		for _, f := range p.statusFields(tc.s) {
			full = append(full, f.text)
		}
		var wider []string
		// Past the full line's length every width shows it whole: 200, then each width from
		// one past it down to 40.
		n := len([]rune(joinFields(p.statusFields(tc.s))))
		for width := 200; width >= 40; width = min(width-1, n+1) {
			line := fitFields(p.statusFields(tc.s), width)
			if n := len([]rune(line)); n >= width || n == 0 {
				t.Fatalf("%s, width %d: status line of %d characters: %q", tc.name, width, n, line)
			}
			shown := statusSeparators.Split(line, -1)
			for _, f := range shown {
				if !statusUnits.MatchString(f) {
					t.Errorf("%s, width %d: field %q is not a whole value with its unit: %q", tc.name, width, f, line)
				}
			}
			if !subsequence(shown, full) {
				t.Errorf("%s, width %d: fields %q are not whole fields of the full line %q", tc.name, width, shown, full)
			}
			if wider != nil && !subsequence(shown, wider) {
				t.Errorf("%s, width %d: fields %q are not a subset of those one column wider, %q", tc.name, width, shown, wider)
			}
			wider = shown
		}
		if len(full) < 3 || full[0] == "" {
			t.Errorf("%s: full line %q", tc.name, full)
		}
	}
}

// subsequence reports whether sub is a subsequence of full.
func subsequence(sub, full []string) bool {
	i := 0
	for _, f := range full {
		if i < len(sub) && sub[i] == f {
			i++
		}
	}
	return i == len(sub)
}

// TestStatusLineAt80: at 80 columns a rate level's status line keeps its rate, its TTFT p50 and
// its live output rate, each with its unit, and the sweep's progress; so does a closed-loop
// level's.
func TestStatusLineAt80(t *testing.T) {
	t.Parallel()
	for _, tc := range statusCases() {
		if !slices.Contains([]string{"concurrency", "rate", "added rate", "retry", "probe"}, tc.name) {
			continue
		}
		p := newDisplay(&bytes.Buffer{}, true, []int{1, 4, 16}, config.Default().Sweep)
		if tc.setup != nil {
			tc.setup(p)
		}
		line := fitFields(p.statusFields(tc.s), 80)
		for _, want := range []string{"TTFT p50 14.1ms", "639 tok/s", "sweep "} {
			if !strings.Contains(line, want) {
				t.Errorf("%s: the 80-column status line %q lacks %q", tc.name, line, want)
			}
		}
		if tc.s.OfferedRPS > 0 && !strings.Contains(line, strconv.FormatFloat(tc.s.OfferedRPS, 'g', 4, 64)+" req/s") {
			t.Errorf("%s: the 80-column status line %q lacks the offered rate %v req/s", tc.name, line, tc.s.OfferedRPS)
		}
	}
}

// TestStatusLineNoRateBeforeCompletion: before a request completes in the window the line
// shows no output rate or TTFT (not "0.0 tok/s" while tokens may be flowing), only "0 done".
func TestStatusLineNoRateBeforeCompletion(t *testing.T) {
	t.Parallel()
	p := newDisplay(&bytes.Buffer{}, true, []int{1, 4}, config.Default().Sweep)
	line := fitFields(p.statusFields(sweep.LiveStats{Index: 1, Concurrency: 4, Phase: record.PhaseMeasure, Elapsed: 3 * time.Second}), 200)
	if strings.Contains(line, "tok/s") || strings.Contains(line, "TTFT") || !strings.HasSuffix(line, "0 done") {
		t.Errorf("status line before any completion: %q", line)
	}
}

// TestStatusLineRetry: a level run again at the load of a finished one is named a retry, also
// when the stop rules ended the planned levels early (its index is then a planned one's); a
// rate level's retry shows its offered rate.
func TestStatusLineRetry(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		rates []float64
		run   record.LevelRun
		live  sweep.LiveStats
		want  string
	}{
		{"concurrency", nil, record.LevelRun{Index: 1, Concurrency: 4},
			sweep.LiveStats{Index: 3, Concurrency: 4, Phase: record.PhaseWarmup}, "retry  c=4  warmup"},
		{"rate", []float64{5, 10, 20, 40}, record.LevelRun{Index: 1, Concurrency: 4096, OfferedRPS: 10},
			sweep.LiveStats{Index: 2, Concurrency: 4096, OfferedRPS: 10, Phase: record.PhaseWarmup}, "retry  10 req/s  warmup"},
	} {
		var buf bytes.Buffer
		p := newDisplay(&buf, true, []int{1, 4, 16, 64}, config.Default().Sweep)
		p.rates = tc.rates
		run, recs := synthLevel(tc.run.Index, tc.run.Concurrency, 100, 10*time.Millisecond, 0)
		run.OfferedRPS = tc.run.OfferedRPS
		p.LevelFinished(record.Level{Run: run, Records: recs})
		if line := fitFields(p.statusFields(tc.live), 200); !strings.HasPrefix(line, tc.want) {
			t.Errorf("%s: status line %q, want it to start %q", tc.name, line, tc.want)
		}
		next := tc.live
		next.Concurrency, next.OfferedRPS = 64, 0
		if tc.rates != nil {
			next.Concurrency, next.OfferedRPS = 4096, 20
		}
		if line := fitFields(p.statusFields(next), 200); !strings.HasPrefix(line, "level ") {
			t.Errorf("%s: a planned level's status line %q, want it to start \"level \"", tc.name, line)
		}
	}
}

// TestDurationText: latencies keep three significant digits and their unit, seconds from 1 s.
func TestDurationText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{850 * time.Microsecond, "0.85ms"},
		{9996 * time.Microsecond, "10.0ms"},
		{14100 * time.Microsecond, "14.1ms"},
		{99960 * time.Microsecond, "100ms"},
		{512 * time.Millisecond, "512ms"},
		{999600 * time.Microsecond, "1.00s"},
		{2566 * time.Millisecond, "2.57s"},
		{12345 * time.Millisecond, "12.3s"},
		{150 * time.Second, "150s"},
	} {
		if got := durationText(c.d); got != c.want {
			t.Errorf("durationText(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}

// TestProbeThenRatesOneProgress: the --rates auto probe's levels and the rate levels after
// them are one progress: the probe's fraction counts the rate levels to come, and the rate
// levels' fraction goes on from the probe's, never back, up to the end.
func TestProbeThenRatesOneProgress(t *testing.T) {
	t.Parallel()
	sw := config.Default().Sweep
	sw.Warmup, sw.Duration, sw.Cooldown, sw.Refine = 2*time.Second, 10*time.Second, time.Second, 0
	probeProto := sw
	probeProto.Warmup, probeProto.Duration, probeProto.Cooldown = time.Second, 2*time.Second, 0
	clk := &fakeClock{t: time.Unix(1e9, 0)}
	var buf bytes.Buffer
	level := func(p *Display, i, c int, rps float64, d time.Duration) {
		p.LevelStarted(i, c)
		for el := time.Duration(0); el <= d; el += 500 * time.Millisecond {
			p.Live(sweep.LiveStats{Index: i, Concurrency: c, OfferedRPS: rps, Phase: record.PhaseMeasure, Elapsed: el,
				OutputTPS: 100, TTFTP50: 10 * time.Millisecond, Completed: 3})
			clk.advance(500 * time.Millisecond)
		}
		p.LevelFinished(record.Level{Run: record.LevelRun{Index: i, Concurrency: c, OfferedRPS: rps}})
	}
	probe := newDisplay(&buf, true, []int{1, 2, 4, 8}, probeProto)
	probe.now, probe.width = clk.now, func() int { return 200 }
	probe.probeFirst(sw)
	for i, c := range []int{1, 2, 4} { // the plateau rule stops the probe after 4
		level(probe, i, c, 0, 3*time.Second)
	}
	probe.Close()
	probeEnd := len(progressFractions(t, buf.String()))
	rates := newDisplay(&buf, true, nil, sw)
	rates.now, rates.width, rates.rates = clk.now, func() int { return 200 }, sweep.PlanRates(10)
	rates.goOnFrom(probe, sw)
	for i, r := range rates.rates {
		clk.advance(sw.Cooldown)
		level(rates, i, 4096, r, sw.Warmup+sw.Duration)
	}
	fr := progressFractions(t, buf.String())
	if probeEnd == 0 || probeEnd == len(fr) {
		t.Fatalf("no status lines of the probe or of the rate levels:\n%s", buf.String())
	}
	if !slices.IsSorted(fr) {
		t.Errorf("the sweep's progress went back: %v", fr)
	}
	// The probe ran 3 × 3 s of 9 s + 8 × 13 s: about 8% at its end, about 99% at the end.
	if last := fr[probeEnd-1]; last < 5 || last > 12 {
		t.Errorf("the probe ended at %d%%, want about 8%% (the rate levels to come counted)", last)
	}
	if first := fr[probeEnd]; first < fr[probeEnd-1] {
		t.Errorf("the rate levels' progress restarted at %d%% after the probe's %d%%", first, fr[probeEnd-1])
	}
	if end := fr[len(fr)-1]; end < 95 {
		t.Errorf("the sweep ended at %d%%", end)
	}
}

// progressFractions returns the "sweep N%" of every status line drawn in out, in order.
func progressFractions(t *testing.T, out string) []int {
	t.Helper()
	var fr []int
	for _, m := range regexp.MustCompile(`sweep (\d+)%`).FindAllStringSubmatch(out, -1) {
		n, err := strconv.Atoi(m[1])
		if err != nil {
			t.Fatal(err)
		}
		fr = append(fr, n)
	}
	return fr
}
