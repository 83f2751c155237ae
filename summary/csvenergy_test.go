package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
)

// roundTrip writes levels with WriteCSV and reads them back with ReadCSV, returning the text
// and the levels read.
func roundTrip(t *testing.T, levels []analysis.Level) (string, []analysis.Level) {
	t.Helper()
	var buf bytes.Buffer
	if err := WriteCSV(&buf, levels); err != nil {
		t.Fatal(err)
	}
	out, err := ReadCSV(bytes.NewReader(buf.Bytes()), "levels.csv")
	if err != nil {
		t.Fatal(err)
	}
	return buf.String(), out
}

// gpuFigures returns GPU figures of power w over a 60 s window at tps output tokens/s, with
// idle 120 W (J per output token above idle (w − 120) ÷ tps).
func gpuFigures(w, tps float64) *analysis.LevelGPU {
	g := analysis.NoLevelGPU()
	g.GPUs, g.Samples = 1, 20
	g.PowerW = analysis.PowerStats{Mean: analysis.Float(w), P95: analysis.Float(w * 1.05)}
	g.EnergyJ = analysis.Float(w * 60)
	g.JPerOutputToken = analysis.Float(w / tps)
	g.JPerOutputTokenAboveIdle = analysis.Float((w - 120) / tps)
	g.OutputTokensPerJoule = analysis.Float(tps / w)
	g.UtilPct = 87.5
	return g
}

// TestCSVGPU: the GPU columns follow every other column of either table when some level has
// GPU figures, are empty for a level without, and read back; without GPU figures they are not
// written (a run without telemetry keeps its columns); a negative figure but the one above
// idle is an error naming the line and column.
func TestCSVGPU(t *testing.T) {
	gpuHeader := ",gpu_power_mean_w,gpu_power_p95_w,gpu_energy_j,j_per_output_token,j_per_output_token_above_idle,output_tokens_per_joule,gpu_util_pct"
	for _, rate := range []bool{false, true} {
		in := sampleLevels()[:3]
		if rate {
			for i := range in {
				in[i].RateLevel = analysis.NewRateLevel(float64(i + 1))
			}
		}
		var plain bytes.Buffer
		if err := WriteCSV(&plain, in); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(plain.String(), "gpu_") || strings.Contains(plain.String(), "joule") {
			t.Errorf("rate %v: without GPU figures the header has GPU columns: %s", rate, plain.String())
		}
		in[0].GPU = gpuFigures(300, float64(in[0].OutputTPS))
		in[1].GPU = gpuFigures(100, float64(in[1].OutputTPS)) // below idle: a negative figure
		text, out := roundTrip(t, in)
		lines := strings.Split(text, "\n")
		if !strings.HasSuffix(lines[0], ",imprecise,latency_rising"+gpuHeader) || !strings.HasSuffix(lines[3], ",false,false,,,,,,,") {
			t.Fatalf("rate %v: csv:\n%s", rate, text)
		}
		plainHeader, _, _ := strings.Cut(plain.String(), "\n")
		if lines[0] != plainHeader+gpuHeader {
			t.Errorf("rate %v: header %q, want the columns without telemetry then the GPU columns", rate, lines[0])
		}
		for i, l := range out[:2] {
			g, w := l.GPU, in[i].GPU
			if g == nil || g.PowerW != w.PowerW || g.EnergyJ != w.EnergyJ || g.JPerOutputToken != w.JPerOutputToken ||
				g.JPerOutputTokenAboveIdle != w.JPerOutputTokenAboveIdle || g.OutputTokensPerJoule != w.OutputTokensPerJoule || g.UtilPct != w.UtilPct {
				t.Errorf("rate %v: level %d read back %+v, want %+v", rate, i, g, w)
			}
		}
		if out[2].GPU != nil {
			t.Errorf("rate %v: a level without GPU figures read back with %+v", rate, *out[2].GPU)
		}
	}
	_, err := ReadCSV(strings.NewReader("concurrency,output_tps,gpu_energy_j\n1,10,-5\n"), "x.csv")
	if err == nil || !strings.Contains(err.Error(), `x.csv:2: column "gpu_energy_j": "-5": must not be negative`) {
		t.Errorf("error %v", err)
	}
}

// TestCSVGPUAnalyzed: levels read from a summary.csv with the GPU columns give the run's
// energy answers (analysis.Result.Energy).
func TestCSVGPUAnalyzed(t *testing.T) {
	in := sampleLevels()
	for i := range in {
		tps := float64(in[i].OutputTPS)
		in[i].GPU = gpuFigures(120+580*float64(min(in[i].Concurrency, 8))/8, tps)
	}
	_, out := roundTrip(t, in)
	r := analysis.Analyze(out, analysis.Meta{}, analysis.DefaultOptions())
	if r.Energy == nil || !r.Energy.Optimal.X.OK() || !r.Energy.AtMaxTPS.JPerOutputToken.OK() {
		t.Errorf("energy from the CSV: %+v", r.Energy)
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, "GPU energy not measured") {
			t.Errorf("warning for a CSV level with its energy: %s", w)
		}
	}
}
