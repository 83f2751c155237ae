package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/analysis/analysistest"
	"github.com/kneecap/kneecap/record"
)

// TestClockNote: the reports say which clock the latencies are on, over every level's latency
// population (analysis.Clock): the console under the level table, Markdown and HTML in the
// method table's first row; nothing for levels without records.
func TestClockNote(t *testing.T) {
	kernelTX := &analysis.Clock{Latencies: analysis.ClockKernel, KernelShare: 1, Requests: 300, Send: record.SendTX, SendTXShare: 1}
	for _, tc := range []struct {
		name   string
		clocks []*analysis.Clock
		want   string
	}{
		{"none", nil, ""},
		{"kernel tx", []*analysis.Clock{kernelTX, kernelTX},
			"Latencies on the kernel's clock: receive timestamps of the chunks, sends by transmit timestamps (100% of requests)"},
		{"kernel write", []*analysis.Clock{{Latencies: analysis.ClockKernel, KernelShare: 1, Requests: 10, Send: record.SendWrite}},
			"Latencies on the kernel's clock: receive timestamps of the chunks, sends when the write of the request returned (no transmit timestamps)"},
		{"mixed", []*analysis.Clock{kernelTX, {Latencies: analysis.ClockMixed, KernelShare: 0.5, Requests: 100, Send: analysis.ClockMixed, SendTXShare: 0.5}},
			"Latencies on the kernel's clock for 88% of requests (receive timestamps of the chunks, sends by transmit timestamps (93% of requests), the others when the write of the request returned), on the client's for the others"},
		{"client", []*analysis.Clock{{Latencies: analysis.ClockClient, Requests: 5}},
			"Latencies on the client's clock: the connections had no kernel timestamps (not Linux, or refused)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := analysistest.Saturating()
			for i := range res.Levels {
				res.Levels[i].Clock = nil
				if i < len(tc.clocks) {
					res.Levels[i].Clock = tc.clocks[i]
				}
			}
			if got := clockNote(res); got != tc.want {
				t.Fatalf("clock note\n%q, want\n%q", got, tc.want)
			}
			var con, md, html bytes.Buffer
			if err := Console(&con, res); err != nil {
				t.Fatal(err)
			}
			if err := Markdown(&md, res, nil); err != nil {
				t.Fatal(err)
			}
			if err := HTML(&html, res, nil); err != nil {
				t.Fatal(err)
			}
			if tc.want == "" {
				if strings.Contains(con.String()+md.String(), "clock") {
					t.Fatal("a clock note without records")
				}
				return
			}
			if !strings.Contains(con.String(), "  "+tc.want+".\n") {
				t.Errorf("console lacks %q:\n%s", tc.want, con.String())
			}
			if !strings.Contains(md.String(), "| quantity | definition |\n|---|---|\n| clock | "+mdCell(tc.want)+" |") {
				t.Errorf("markdown's method table does not start with the clock")
			}
			if !strings.Contains(html.String(), ">clock<") || !strings.Contains(html.String(), "Latencies on the") {
				t.Errorf("html's method table lacks the clock note")
			}
		})
	}
}

// TestClientEffectNote: the largest deciding estimate of each kind over the levels, where it
// was measured and the tolerance; tails that do not decide (p99) are left out, and so is a
// superseded run.
func TestClientEffectNote(t *testing.T) {
	res := analysistest.Base([]int{1, 16})
	res.Levels[0].ClientEffect = map[string]float64{"ttft_p95": 0.002, "ttft_p99": 0.5, "offered_load": 0.008}
	res.Levels[1].ClientEffect = map[string]float64{"ttft_p50": 0.003, "offered_load": 0.001}
	res.Levels[0].ClientTolerance, res.Levels[1].ClientTolerance = 0.01, 0.01
	stale := analysistest.Level(16)
	stale.Superseded, stale.ClientEffect = true, map[string]float64{"offered_load": 0.9}
	res.Levels = append(res.Levels, stale)
	want := "Client effect, the largest at any level: on TTFT p50 0.3% (at 16), on offered load 0.8% (at 1); a level is client-bound above 1.0%"
	if got := clientEffectNote(res); got != want {
		t.Errorf("clientEffectNote = %q\nwant %q", got, want)
	}
	if got := clientEffectNote(analysistest.Base([]int{1})); got != "" {
		t.Errorf("no estimates: %q, want none", got)
	}
	// Ties (every latency estimate 0, as with transmit stamps and no gathering): the same
	// sentence every time, the first percentile by name and the first level by concurrency.
	tie := analysistest.Base([]int{4, 2})
	for i := range tie.Levels {
		tie.Levels[i].ClientTolerance = 0.01
		tie.Levels[i].ClientEffect = map[string]float64{"ttft_p50": 0, "ttft_p95": 0, "e2e_p50": 0, "e2e_p95": 0, "offered_load": 0}
	}
	want = "Client effect, the largest at any level: on TTFT p50 ≤ 0.1% (at 2), on E2E p50 ≤ 0.1% (at 2), on offered load ≤ 0.1% (at 2); a level is client-bound above 1.0%"
	for range 50 {
		if got := clientEffectNote(tie); got != want {
			t.Fatalf("ties: %q\nwant %q", got, want)
		}
	}
}
