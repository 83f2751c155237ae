package server

import (
	"math"
	"testing"

	"github.com/kneecap/kneecap/record"
)

const sec = int64(1e9)

// reading is one GPU's hand-made reading: at t seconds, power W and energy counter mJ (a
// negative value leaves the figure out).
type reading struct {
	t             float64
	power, energy float64
}

// samplesOf makes the readings of GPUs by index, one GPUSample per time (the GPUs' readings at
// equal times merged).
func samplesOf(gpus map[string][]reading) []GPUSample {
	var out []GPUSample
	at := map[int64]int{}
	for _, idx := range []string{"0", "1"} {
		for _, r := range gpus[idx] {
			t := int64(r.t * float64(sec))
			i, ok := at[t]
			if !ok {
				i = len(out)
				at[t] = i
				out = append(out, GPUSample{TUnixNS: t})
			}
			v := GPUValue{GPU: record.GPU{Index: idx, UUID: "GPU-" + idx, Host: "h"}}
			if r.power >= 0 {
				v.PowerW = &r.power
			}
			if r.energy >= 0 {
				v.EnergyMJ = &r.energy
			}
			out[i].GPUs = append(out[i].GPUs, v)
		}
	}
	return out
}

// gpu0 reads 100, 200, 300, 100 W at 0, 1, 2, 3 s, its counter at 1,000,000, 1,150,000,
// 1,400,000, 1,600,000 mJ.
var gpu0 = []reading{{0, 100, 1_000_000}, {1, 200, 1_150_000}, {2, 300, 1_400_000}, {3, 100, 1_600_000}}

// Expected values derived by hand for the window [0.5 s, 2.5 s):
//   - readings in it: t = 1 and 2 s, so the mean power is (200 + 300) / 2 = 250 W and the p95
//     (type 7) is 200 + 0.95 × (300 − 200) = 295 W;
//   - the counter's increase since t = 0 is 0, 150,000, 400,000, 600,000 mJ; at 0.5 s it is
//     75,000 (halfway between 0 and 150,000) and at 2.5 s 500,000, so the energy is 425,000 mJ
//     = 425 J;
//   - without the counter, the power at 0.5 s is 150 W and at 2.5 s 200 W, and the trapezoids
//     are 0.5 × (150 + 200) / 2 = 87.5, 1 × (200 + 300) / 2 = 250 and 0.5 × (300 + 200) / 2 =
//     125 J: 462.5 J;
//   - a reset (the counter at 2 s reads 50,000, at 3 s 250,000): the increases are 150,000,
//     then 50,000 (from 0), then 200,000, so the counter reads 0, 150,000, 200,000, 400,000;
//     at 0.5 s 75,000 and at 2.5 s 300,000: 225 J.
func TestSummarizeGPUHandMade(t *testing.T) {
	noCounter := []reading{{0, 100, -1}, {1, 200, -1}, {2, 300, -1}, {3, 100, -1}}
	reset := []reading{{0, 100, 1_000_000}, {1, 200, 1_150_000}, {2, 300, 50_000}, {3, 100, 250_000}}
	for _, tc := range []struct {
		name       string
		readings   []reading
		energyJ    float64
		energySrc  string
		mean, p95  float64
		wantEnergy bool
	}{
		{"counter", gpu0, 425, record.EnergyFromCounter, 250, 295, true},
		{"power integral", noCounter, 462.5, record.EnergyFromPower, 250, 295, true},
		{"counter reset", reset, 225, record.EnergyFromCounter, 250, 295, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := SummarizeGPU(samplesOf(map[string][]reading{"0": tc.readings}), sec/2, 5*sec/2)
			if st == nil {
				t.Fatal("nil summary")
			}
			near(t, "power mean", st.PowerMeanW, tc.mean)
			near(t, "power p95", st.PowerP95W, tc.p95)
			near(t, "GPU 0 power mean", st.GPUs[0].PowerMeanW, tc.mean)
			if st.EnergyJ == nil || st.GPUs[0].EnergyJ == nil {
				t.Fatalf("energy %v, want %g", st.EnergyJ, tc.energyJ)
			}
			near(t, "energy", *st.EnergyJ, tc.energyJ)
			near(t, "GPU 0 energy", *st.GPUs[0].EnergyJ, tc.energyJ)
			if st.EnergySource != tc.energySrc || st.Samples != 2 {
				t.Errorf("energy source %q samples %d, want %q 2", st.EnergySource, st.Samples, tc.energySrc)
			}
		})
	}
}

// Two GPUs: GPU 1 reads 50 W flat with its counter at 0, 50,000, 100,000, 150,000 mJ (50 W).
// Over [0.5 s, 2.5 s) the total power per reading is 250 and 350 W: mean 300, p95 250 + 0.95
// × 100 = 345; the energy 425 + 100 = 525 J. Over [1 s, 3 s) a window ending on a reading:
// readings 1 and 2 s in it, the counters at 1 s and 3 s give 450 J and 100 J.
func TestSummarizeGPUTwoGPUs(t *testing.T) {
	gpu1 := []reading{{0, 50, 0}, {1, 50, 50_000}, {2, 50, 100_000}, {3, 50, 150_000}}
	samples := samplesOf(map[string][]reading{"0": gpu0, "1": gpu1})
	st := SummarizeGPU(samples, sec/2, 5*sec/2)
	if st == nil || len(st.GPUs) != 2 || st.EnergyJ == nil {
		t.Fatalf("summary %+v", st)
	}
	near(t, "total mean", st.PowerMeanW, 300)
	near(t, "total p95", st.PowerP95W, 345)
	near(t, "total energy", *st.EnergyJ, 525)
	near(t, "GPU 1 energy", *st.GPUs[1].EnergyJ, 100)
	if st.GPUs[0].Index != "0" || st.GPUs[1].Index != "1" || st.EnergySource != record.EnergyFromCounter {
		t.Errorf("GPUs %+v source %q", st.GPUs, st.EnergySource)
	}
	st = SummarizeGPU(samples, sec, 3*sec)
	near(t, "energy over [1 s, 3 s)", *st.EnergyJ, 450+100)
}

// A window no reading falls in is nil; one the readings do not bracket has its power but no
// energy; a GPU without a counter in the window makes the total's source the power integral.
func TestSummarizeGPUEdges(t *testing.T) {
	samples := samplesOf(map[string][]reading{"0": gpu0})
	if st := SummarizeGPU(samples, 7*sec/2, 4*sec); st != nil {
		t.Errorf("window after the readings: %+v, want nil", st)
	}
	if st := SummarizeGPU(nil, 0, sec); st != nil {
		t.Errorf("no readings: %+v, want nil", st)
	}
	st := SummarizeGPU(samples, 5*sec/2, 7*sec/2) // t = 3 s in it, nothing at or after 3.5 s
	if st == nil || st.EnergyJ != nil || st.GPUs[0].EnergyJ != nil || st.EnergySource != "" {
		t.Fatalf("unbracketed window: %+v, want power only", st)
	}
	near(t, "unbracketed power", st.PowerMeanW, 100)

	gpu1 := []reading{{0, 50, -1}, {1, 50, -1}, {2, 50, -1}, {3, 50, -1}}
	st = SummarizeGPU(samplesOf(map[string][]reading{"0": gpu0, "1": gpu1}), sec/2, 5*sec/2)
	if st.EnergySource != record.EnergyFromPower {
		t.Errorf("energy source %q, want %q when one GPU has no counter", st.EnergySource, record.EnergyFromPower)
	}
	near(t, "mixed energy", *st.EnergyJ, 425+100) // 50 W flat over 2 s by trapezoids
}

// Util, SM active and SM clock are means over the GPUs' readings in the window, FB used the
// largest; a GPU reading no power is not counted.
func TestSummarizeGPUOtherFigures(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	samples := []GPUSample{
		{TUnixNS: 0, GPUs: []GPUValue{
			{GPU: record.GPU{Index: "0"}, PowerW: f(100), UtilPct: f(40), SMActive: f(0.2), FBUsedMiB: f(1000), SMClockMHz: f(1000)},
			{GPU: record.GPU{Index: "1"}, UtilPct: f(99), FBUsedMiB: f(99999)},
		}},
		{TUnixNS: sec, GPUs: []GPUValue{
			{GPU: record.GPU{Index: "0"}, PowerW: f(200), UtilPct: f(60), FBUsedMiB: f(3000), SMClockMHz: f(2000)},
		}},
	}
	st := SummarizeGPU(samples, 0, 2*sec)
	if st == nil || len(st.GPUs) != 1 {
		t.Fatalf("summary %+v, want GPU 0 only", st)
	}
	for _, c := range []struct {
		name string
		got  *float64
		want float64
	}{{"util", st.UtilPct, 50}, {"sm active", st.SMActive, 0.2}, {"fb used", st.FBUsedMiB, 3000}, {"sm clock", st.SMClockMHz, 1500}} {
		if c.got == nil {
			t.Errorf("%s nil, want %g", c.name, c.want)
			continue
		}
		near(t, c.name, *c.got, c.want)
	}
}

// near fails t unless got is within 1e-9 (relative) of want.
func near(t *testing.T, what string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %.12g, want %g", what, got, want)
	}
}
