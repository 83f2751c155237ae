package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/selfcheck"
	"gonum.org/v1/gonum/stat"
)

// The report: the tables of both clients, the targets with PASS or FAIL, and the fit of peak
// RSS over the levels.

// report prints the tables and the targets; it returns the missed targets. floor holds the
// floor client's rows (may be empty).
func report(w io.Writer, cfg config, rows, floor []row, elapsed time.Duration) []string {
	fmt.Fprintf(w, "kneecap end-to-end load benchmark: %s, %d CPUs, GOMAXPROCS %d, %s/%s, %s\n",
		cpuModel(), runtime.NumCPU(), runtime.GOMAXPROCS(0), runtime.GOOS, runtime.GOARCH, runtime.Version())
	fmt.Fprintf(w, "simulator (separate process): kneecap sim --profile fixed --ttft %s --itl %s; %d output tokens, 1 token/chunk; %s total\n\n",
		cfg.ttft, cfg.itl, cfg.outputTokens, elapsed.Round(time.Second))
	ttftCfg := ms(cfg.ttft)
	tpotCfg := ms(cfg.itl)
	table := func(title string, rows []row) {
		fmt.Fprintln(w, title)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		var notes []string
		fmt.Fprintln(tw, "streams\tachieved\ttokens/s\t(ideal)\tCPU µs/tok\t(bench)\tRSS KiB/str\theap\tstacks\tgoroutines\tTTFT p50 ms\terr\tTPOT p50 ms\terr\tread lag p99\tsched p99\tbound\tsim CPU\terrors\t")
		for _, r := range rows {
			sched, bound, lag := "-", "-", "-"
			if r.client != nil {
				sched = r.client.SchedLatencyP99.Round(time.Microsecond).String()
				if r.client.ReadLagChunks > 0 {
					lag = r.client.ReadLagP99.Round(time.Microsecond).String()
				}
				bound = "no"
				if r.client.Bound {
					bound = "yes"
					notes = append(notes, fmt.Sprintf("%d streams: client-bound: %s", r.streams, r.client.Reason))
				}
				if r.client.Evidence != "" {
					bound += " (" + r.client.Evidence + ")"
				}
				if r.client.Note != "" {
					notes = append(notes, fmt.Sprintf("%d streams: %s", r.streams, r.client.Note))
				}
			}
			fmt.Fprintf(tw, "%d\t%.1f\t%.0f\t%.0f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\t%.2f\t%.2f\t%+.2f%%\t%.3f\t%+.2f%%\t%s\t%s\t%s\t%.0f%%\t%d/%d\t\n",
				r.streams, r.achieved, r.tps, r.idealTPS, float64(r.cpuPerToken())/1e3, float64(perToken(r.benchCPU, r.tokens))/1e3,
				r.rssPerStream/1024, r.heapPerStream/1024, r.stackPerStream/1024, r.gPerStream,
				r.ttft, 100*(r.ttft-ttftCfg)/ttftCfg, r.tpot, 100*(r.tpot-tpotCfg)/tpotCfg,
				lag, sched, bound, 100*r.simUtil, r.errs, r.requests)
		}
		_ = tw.Flush()
		for _, n := range notes {
			fmt.Fprintln(w, "  "+n)
		}
		fmt.Fprintln(w)
	}
	table("kneecap client (sweep/openai on go-openai):", rows)
	if len(floor) > 0 {
		table("floor client (raw HTTP/1.1, 1 KiB buffer, no JSON decoding; the cost any Go client pays per chunk):", floor)
	}
	fmt.Fprintln(w, "CPU µs/tok: getrusage(RUSAGE_SELF) over the window − the sampler thread's own CPU (bench column), ÷ tokens arrived in the window;")
	fmt.Fprintln(w, "RSS: (peak VmRSS during the level − VmRSS before the sweep) ÷ streams; heap, stacks: the same for Go heap objects and goroutine stacks (KiB);")
	fmt.Fprintln(w, "goroutines: extra goroutines per stream at peak; err: (measured − configured) ÷ configured; sim CPU: the simulator's CPU ÷ (window × CPUs);")
	fmt.Fprintln(w, "read lag p99: kernel receive timestamp → the client's chunk timestamp (SO_TIMESTAMPNS, Linux); bound: the verdict and what decided it (estimates: the client's effect on each number, or heuristics).")
	fixedRSS, slope, fit := rssSlope(rows)
	if fit {
		fmt.Fprintf(w, "peak RSS over the levels (least squares): %.1f MiB + %.1f KiB × streams\n", fixedRSS/(1<<20), slope/1024)
	}

	var miss []string
	check := func(ok bool, format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		verdict := "PASS"
		if !ok {
			verdict = "FAIL"
			miss = append(miss, msg)
		}
		fmt.Fprintf(w, "%s  %s\n", verdict, msg)
	}
	fmt.Fprintln(w)
	if fit {
		check(slope <= targetRSSPerStream, "memory per stream (slope of peak RSS over the levels) %.1f KiB ≤ %d KiB", slope/1024, targetRSSPerStream>>10)
	}
	for i, r := range rows {
		check(r.errs == 0 && r.achieved >= sustainedRatio*float64(r.streams),
			"%d streams sustained: achieved %.1f ≥ %.0f%%, %d errors", r.streams, r.achieved, 100*sustainedRatio, r.errs)
		floorNote := ""
		if i < len(floor) && floor[i].streams == r.streams {
			f := floor[i].cpuPerToken()
			floorNote = fmt.Sprintf(" (floor client %.2f µs/token; kneecap's own cost %.2f µs/token)", float64(f)/1e3, float64(r.cpuPerToken()-f)/1e3)
		}
		check(r.cpuPerToken() <= targetCPUPerToken, "%d streams: client CPU %.2f µs/token ≤ %s%s", r.streams, float64(r.cpuPerToken())/1e3, targetCPUPerToken, floorNote)
		// Without a slope (one level) the average is all there is: check it at any level.
		if r.streams >= memoryMinStreams || !fit {
			check(r.rssPerStream <= targetRSSPerStream, "%d streams: %.1f KiB/stream ≤ %d KiB", r.streams, r.rssPerStream/1024, targetRSSPerStream>>10)
		}
		if r.streams <= fidelityMaxStreams {
			for _, m := range []struct {
				name      string
				got, want float64
			}{{"TTFT", r.ttft, ttftCfg}, {"TPOT", r.tpot, tpotCfg}} {
				tol := targetRelErr*m.want + ms(targetAbsErr)
				check(math.Abs(m.got-m.want) <= tol, "%d streams: %s p50 %.3f ms within %.3f ms of %.3f ms", r.streams, m.name, m.got, tol, m.want)
			}
		}
	}
	goals(w, rows, floor, slope, fit, ttftCfg, tpotCfg)
	return miss
}

// Goals of issue 17 on a 2-core machine, printed PASS or FAIL beside the targets but not yet
// gates (-check ignores them): kneecap's CPU per token within goalFloorRatio of the floor
// client's at goalStreams, memory per stream (the slope) within goalRSSPerStream, and the
// client verdict: goalStreams valid with TTFT and TPOT p50 within goalRelErr, the largest level
// refused by the client-effect estimates (issue 22; issue 17 asked for the read lag).
const (
	goalStreams      = 1024
	goalFloorRatio   = 1.15
	goalRSSPerStream = 40 << 10
	goalRelErr       = 0.01
)

// goals prints the goals of issue 17 (see the constants).
func goals(w io.Writer, rows, floor []row, slope float64, fit bool, ttftCfg, tpotCfg float64) {
	fmt.Fprintln(w, "\ngoals (issue 17; not gates):")
	say := func(ok bool, format string, args ...any) {
		verdict := "PASS"
		if !ok {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s  %s\n", verdict, fmt.Sprintf(format, args...))
	}
	if fit {
		say(slope <= goalRSSPerStream, "memory per stream (slope) %.1f KiB ≤ %d KiB", slope/1024, goalRSSPerStream>>10)
	}
	for i, r := range rows {
		if r.streams == goalStreams && i < len(floor) && floor[i].streams == r.streams && floor[i].cpuPerToken() > 0 {
			ratio := float64(r.cpuPerToken()) / float64(floor[i].cpuPerToken())
			say(ratio <= goalFloorRatio, "%d streams: client CPU %.2f× the floor client's ≤ %.2f×", r.streams, ratio, goalFloorRatio)
		}
		if r.streams == goalStreams {
			bound := r.client != nil && r.client.Bound
			ttftErr, tpotErr := math.Abs(r.ttft-ttftCfg)/ttftCfg, math.Abs(r.tpot-tpotCfg)/tpotCfg
			say(!bound && ttftErr <= goalRelErr && tpotErr <= goalRelErr, "%d streams: not client-bound, TTFT and TPOT p50 within %.0f%% (%+.2f%%, %+.2f%%)",
				r.streams, 100*goalRelErr, 100*(r.ttft-ttftCfg)/ttftCfg, 100*(r.tpot-tpotCfg)/tpotCfg)
		}
	}
	if n := len(rows); n > 0 && rows[n-1].streams > goalStreams {
		r := rows[n-1]
		byEstimates := r.client != nil && r.client.Bound && r.client.Evidence == record.EvidenceEstimates
		why := "no estimate"
		if r.client != nil && len(r.client.Effects) > 0 {
			why = selfcheck.EffectSummary(r.client.Effects)
		}
		say(byEstimates, "%d streams: client-bound by the estimates (%s)", r.streams, why)
	}
}

// rssSlope fits peak RSS growth = fixed + slope × streams over the levels by least squares
// (bytes); ok is false with fewer than two distinct levels.
func rssSlope(rows []row) (fixed, slope float64, ok bool) {
	if len(rows) < 2 {
		return 0, 0, false
	}
	xs := make([]float64, len(rows))
	ys := make([]float64, len(rows))
	for i, r := range rows {
		xs[i] = float64(r.streams)
		ys[i] = r.rssPerStream * float64(r.streams)
	}
	if stat.Variance(xs, nil) == 0 {
		return 0, 0, false
	}
	fixed, slope = stat.LinearRegression(xs, ys, nil, false)
	return fixed, slope, true
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// cpuModel returns the CPU model name from /proc/cpuinfo, or GOARCH.
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}
