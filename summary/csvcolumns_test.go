package summary

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// rateLevels are arrival-rate levels of a replica of capacity 10 requests/s (100-token
// requests, 1000 tokens/s): the completion rate follows the offered rate up to 8 and stays at
// 10 past it, TTFT is flat at 50 ms and explodes in overload.
func rateLevels() []analysis.Level {
	var out []analysis.Level
	for _, x := range []float64{2, 4, 8, 12, 16} {
		y := min(x, 10)
		lv := newLevel()
		lv.RateLevel = analysis.NewRateLevel(x)
		lv.Concurrency = 64
		lv.OutputTPS, lv.QPS, lv.MeanOutputTokens = analysis.Float(100*y), analysis.Float(y), 100
		lv.OutputTokens.Mean = 100
		lv.AchievedRPS, lv.RealizedRPS = analysis.Float(x), analysis.Float(0.98*x)
		lv.Sustainable = x < 10
		lv.BacklogGrowthRPS = analysis.Float(max(x-10, 0))
		ttft := 50.0
		if x > 10 {
			ttft = 50 + 500*(x-10)
		}
		lv.TTFT = analysis.Latency{Mean: analysis.Float(ttft), P50: analysis.Float(ttft), P90: analysis.NaN(), P95: analysis.Float(1.5 * ttft), P99: analysis.Float(2 * ttft)}
		lv.TTFTScheduled = analysis.Latency{Mean: analysis.Float(ttft + 0.1), P50: analysis.Float(ttft + 0.1), P90: analysis.NaN(), P95: analysis.Float(1.5*ttft + 0.1), P99: analysis.Float(2*ttft + 0.1)}
		lv.ScheduleLag = analysis.Latency{Mean: 0.1, P50: 0.1, P90: 0.2, P95: 0.2, P99: 0.3}
		out = append(out, lv)
	}
	return out
}

// WriteCSV of rate levels writes rate_rps in place of concurrency and the rate columns
// (realized_rps last, after the prefix-cache columns);
// ReadCSV reads them back to the same levels (the in-flight cap, concurrency, is not a
// column of a rate table and reads back 0).
func TestRateCSVRoundTrip(t *testing.T) {
	in := rateLevels()
	var buf bytes.Buffer
	if err := WriteCSV(&buf, in); err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(buf.String(), "\n")
	if !strings.HasPrefix(header, "rate_rps,output_tps,") || strings.Contains(","+header+",", ",concurrency,") ||
		!strings.HasSuffix(header, "e2e_scheduled_p99_ms,prefix_cache_hit_rate,prefix_cache_source,realized_rps,imprecise,latency_rising") || header != strings.Join(rateCSVColumns(), ",") {
		t.Errorf("header %q", header)
	}
	out, err := ReadCSV(bytes.NewReader(buf.Bytes()), "rates.csv")
	if err != nil {
		t.Fatal(err)
	}
	for i := range in {
		in[i].Concurrency = 0
		if a, b := jsonOf(t, in[i]), jsonOf(t, out[i]); !reflect.DeepEqual(a, b) {
			t.Errorf("level %d:\n in  %s\n out %s", i, a, b)
		}
	}
}

// TestRateCSVPublishedTable: a table as published for an open-loop benchmark — the request
// rate, throughputs and a mean TTFT, no p50 and no sustainable column — gives the capacity,
// its unsustainable levels from their completion deficit, and the TTFT blow-up rate on the
// mean, saying so.
func TestRateCSVPublishedTable(t *testing.T) {
	const table = `# vLLM bench serve --request-rate R, 1000 prompts each
rate_rps,output_tps,qps,mean_output_tokens,ttft_mean_ms,e2e_p99_ms
2,200,2,100,52,1900
4,400,4,100,53,2000
6,600,6,100,55,2100
8,800,8,100,61,2300
12,1000,10,100,2100,9000
16,1000,10,100,6000,21000
`
	levels, err := ReadCSV(strings.NewReader(table), "published.csv")
	if err != nil {
		t.Fatal(err)
	}
	res := analysis.Analyze(levels, analysis.Meta{}, analysis.DefaultOptions())
	r := res.Rate
	if res.Mode != record.ModeRate || r == nil {
		t.Fatalf("mode %q: want rate", res.Mode)
	}
	if r.CapacityRPS != 10 || r.CapacityBracket[0] != 8 || r.CapacityBracket[1] != 12 || r.CapacityTPS != 1000 {
		t.Errorf("capacity %v (%v tokens/s) between %v, want 10 (1000) between 8 and 12", r.CapacityRPS, r.CapacityTPS, r.CapacityBracket)
	}
	if !res.Levels[3].Sustainable || res.Levels[4].Sustainable {
		t.Errorf("sustainable 8: %v, 12: %v; want true, false (12 completes 10)", res.Levels[3].Sustainable, res.Levels[4].Sustainable)
	}
	if r.TTFTBlowupStat != "mean" || !(r.TTFTBlowupRPS >= 8 && r.TTFTBlowupRPS <= 12) || r.LatencyFrom != "sent" {
		t.Errorf("blow-up %v on %q (latency from %q), want between 8 and 12 on the mean, from the send time", r.TTFTBlowupRPS, r.TTFTBlowupStat, r.LatencyFrom)
	}
}

// TestRateCSVErrors: the rate columns' errors name the file, line and column.
func TestRateCSVErrors(t *testing.T) {
	for _, c := range []struct{ csv, want string }{
		{"concurrency,rate_rps,output_tps\n1,2,3\n", `x.csv:1: column "rate_rps": a table has concurrency (closed-loop levels) or rate_rps (arrival-rate levels), not both`},
		{"output_tps\n3\n", `x.csv:1: column "concurrency": required column missing (or rate_rps, for arrival-rate levels)`},
		{"rate_rps,qps\n3,1\n", `x.csv:1: column "output_tps": required column missing`},
		{"concurrency,output_tps,sustainable\n1,3,true\n", `x.csv:1: column "sustainable": an arrival-rate column in a table of concurrency levels`},
		{"rate_rps,output_tps\n0,3\n", `x.csv:2: column "rate_rps": "0": the offered rate must be positive`},
		{"rate_rps,output_tps\n,3\n", `x.csv:2: column "rate_rps": required value is empty`},
		{"rate_rps,output_tps,sustainable\n1,3,maybe\n", `x.csv:2: column "sustainable": "maybe" is not true or false`},
		{"rate_rps,output_tps,schedule_lag_p99_ms\n1,3,-1\n", `x.csv:2: column "schedule_lag_p99_ms": "-1": must not be negative`},
	} {
		_, err := ReadCSV(strings.NewReader(c.csv), "x.csv")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.csv, err, c.want)
		}
	}
	// A shrinking backlog is a negative growth, not an error.
	levels, err := ReadCSV(strings.NewReader("rate_rps,output_tps,backlog_growth_rps\n1,3,-0.5\n"), "x.csv")
	if err != nil || levels[0].BacklogGrowthRPS != -0.5 {
		t.Errorf("negative backlog growth: %v, %v", err, levels)
	}
}

// TestLevelKey names levels by the column that identifies them.
func TestLevelKey(t *testing.T) {
	c, r := newLevel(), newLevel()
	c.Concurrency = 8
	r.RateLevel = analysis.NewRateLevel(2.5)
	if levelKey(&c) != "concurrency 8" || levelKey(&r) != "rate_rps 2.5" {
		t.Errorf("keys %q, %q", levelKey(&c), levelKey(&r))
	}
}
