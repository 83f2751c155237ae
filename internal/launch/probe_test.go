package launch

import (
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/sweep"
)

// TestProbeProtocolSizesWindows: the probe's windows are the short ones (2 s, 4 s when not
// steady) for a fast server and widen to 3 × the pilot's E2E (6 × when not steady) for a slow
// one, 512 tokens at 12.5 ms (6.4 s a request) getting a 19.2 s window, capped at 60 s; the
// warmup may last 2 × E2E; the sweep's budget is kept.
func TestProbeProtocolSizesWindows(t *testing.T) {
	p := config.Default().Sweep
	p.Stop.Budget = 10 * time.Minute
	for _, tt := range []struct {
		name                        string
		e2e                         time.Duration
		dur, maxDur, warmMaxAtLeast time.Duration
	}{
		{"fast server", 100 * time.Millisecond, 2 * time.Second, 4 * time.Second, 0},
		{"6.4 s a request", 6400 * time.Millisecond, 19200 * time.Millisecond, 38400 * time.Millisecond, 12800 * time.Millisecond},
		{"a minute a request", time.Minute, probeWindowCap, 2 * probeWindowCap, 2 * time.Minute},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := probeProtocol(p, tt.e2e)
			if q.Duration != tt.dur || q.MaxDuration != tt.maxDur || q.WarmupMax < tt.warmMaxAtLeast {
				t.Errorf("duration %s, max_duration %s, warmup_max %s: want %s, %s, ≥ %s", q.Duration, q.MaxDuration, q.WarmupMax, tt.dur, tt.maxDur, tt.warmMaxAtLeast)
			}
			if q.Stop.Budget != p.Stop.Budget || !q.Stop.Plateau || q.RateMode() || q.Refine != 0 {
				t.Errorf("stop %+v, mode %q, refine %d: want the budget %s, plateau, closed loop, no levels added", q.Stop, q.Mode, q.Refine, p.Stop.Budget)
			}
		})
	}
}

// TestProbeEstimate: with a valid level the max QPS is the best valid level's completion
// rate; with none valid (too few completions in the windows) it is estimated as the best
// level's completion rate, output TPS ÷ the mean output tokens of the requests served (user
// cancels among them; the nominal length when none completed), and Estimate says so; a probe
// that streamed nothing is an error.
func TestProbeEstimate(t *testing.T) {
	lv := func(c int, valid bool, tps, meanOut float64) analysis.Level {
		return analysis.Level{Concurrency: c, Valid: valid, OutputTPS: analysis.Float(tps), MeanOutputTokens: analysis.Float(meanOut),
			QPS: analysis.NaN()}
	}
	cancelled := func(l analysis.Level, servedOut float64) analysis.Level {
		l.UserCancelled = &analysis.UserCancelled{Count: 1, Share: 0.5, MeanOutputTokens: analysis.Float(servedOut)}
		return l
	}
	nan := math.NaN()
	for _, tt := range []struct {
		name     string
		levels   []analysis.Level
		want     float64
		at       int
		estimate string
	}{
		{"valid levels", []analysis.Level{lv(1, true, 100, 100), lv(2, true, 300, 100), lv(4, false, 900, 100)}, 3, 2, ""},
		{"none valid", []analysis.Level{lv(1, false, 40, 80), lv(2, false, 160, 80), lv(4, false, 120, 80)}, 2, 2, "its completion rate"},
		// User cancels are served: 160 tokens/s over the served requests' mean of 40 is 4/s
		// (over the completed ones' 80 it would be 2/s).
		{"none valid, cancels", []analysis.Level{lv(1, false, 40, 80), cancelled(lv(2, false, 160, 80), 40)}, 4, 2, "user cancels counted as served"},
		{"none completed", []analysis.Level{lv(1, false, 20, nan), lv(2, false, 50, nan)}, 0.1, 2, "nominal output tokens (none of its requests completed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := probeOf(tt.levels, 500)
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(p.MaxQPS-tt.want) > 1e-9 || p.MaxQPSConcurrency != tt.at || !strings.Contains(p.Estimate, tt.estimate) || (tt.estimate == "") != (p.Estimate == "") {
				t.Errorf("max QPS %g at %d, estimate %q: want %g at %d, estimate %q", p.MaxQPS, p.MaxQPSConcurrency, p.Estimate, tt.want, tt.at, tt.estimate)
			}
		})
	}
	if _, err := probeOf([]analysis.Level{lv(1, false, 0, nan)}, 500); err == nil || !strings.Contains(err.Error(), "no level of 1 was valid or streamed output tokens") {
		t.Errorf("nothing streamed: %v", err)
	}
}

// TestProbeFailedExitCodes: a probe that did not finish is exit 1 (an error, a silent
// server), 130 (interrupted) or 3 only when the server stopped accepting connections.
func TestProbeFailedExitCodes(t *testing.T) {
	for _, tt := range []struct {
		name string
		out  sweep.Outcome
		err  error
		code int
	}{
		{"finished", sweep.Outcome{StopReason: sweep.StopDone}, nil, exit.OK},
		{"error", sweep.Outcome{}, errors.New("boom"), exit.Failure},
		{"interrupted", sweep.Outcome{Interrupted: true}, nil, exit.Interrupted},
		{"unreachable", sweep.Outcome{Unreachable: true, StopReason: "no request connected"}, nil, exit.Unreachable},
		{"silent", sweep.Outcome{Silent: true, StopReason: "no answer"}, nil, exit.Failure},
	} {
		if got := exit.Code(probeFailed(tt.out, tt.err)); got != tt.code {
			t.Errorf("%s: exit %d, want %d", tt.name, got, tt.code)
		}
	}
}

// TestProbeFrom: --from accepts a results directory that keeps only analysis.json
// (examples/sample-run has no records.jsonl): its max QPS is the largest completion rate of
// a valid level.
func TestProbeFrom(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "sample-run")
	p, err := probeFrom(dir, config.Default().AnalysisOptions(), 128)
	if err != nil {
		t.Fatal(err)
	}
	if !(p.MaxQPS > 0) || p.MaxQPSConcurrency < 1 || p.Estimate != "" || len(p.Rates) == 0 || p.From != dir {
		t.Errorf("max QPS %g at %d (estimate %q), rates %v, from %q: want a valid level's completion rate", p.MaxQPS, p.MaxQPSConcurrency, p.Estimate, p.Rates, p.From)
	}
}
