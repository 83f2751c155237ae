package analysis

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// The power model of the simulator's GPUs (issue 24, DESIGN §6): P = idle + (max − idle) ×
// running ÷ S per GPU, one GPU, over windows of energyWindow seconds.
const (
	energyIdleW  = 120.0
	energyMaxW   = 700.0
	energyWindow = 60.0
	// The step time of the closed loop's levels (groundTruthStep): 10 ms + 0.5 ms per sequence,
	// S = 64 slots.
	energyBase, energyPerSeq = 10e-3, 0.5e-3
	energyS                  = 64
)

// energyOptimumTrue is the closed form of the closed loop's energy-optimal concurrency: with
// b = min(c, S) sequences running, TPS = b ÷ (base + per_seq·b) and J per output token =
// P ÷ TPS = idle·base/b + idle·per_seq + k·base + k·per_seq·b, k = (max − idle) ÷ S, lowest
// at b* = √(idle·base ÷ (k·per_seq)) = √(120·0.01·64 ÷ (580·0.0005)) ≈ 16.27.
func energyOptimumTrue() float64 {
	k := (energyMaxW - energyIdleW) / energyS
	return math.Sqrt(energyIdleW * energyBase / (k * energyPerSeq))
}

// withPower gives lv GPU telemetry of total power powerW over its window (energyWindow s,
// energy P × window from the counter, samples readings) as Summarize would (levelGPU).
func withPower(lv *Level, powerW float64, samples int) {
	lv.WindowS = energyWindow
	e := powerW * energyWindow
	util := 100 * (powerW - energyIdleW) / (energyMaxW - energyIdleW)
	g := &record.GPUStats{Source: record.GPUFromDCGM, From: "http://gpu:9400/metrics", Samples: samples,
		GPUs:       []record.GPUReading{{GPU: record.GPU{Index: "0", Model: "H100"}, PowerMeanW: powerW, PowerP95W: powerW, EnergyJ: &e}},
		PowerMeanW: powerW, PowerP95W: powerW, EnergyJ: &e, EnergySource: record.EnergyFromCounter, UtilPct: &util}
	lv.GPU = levelGPU(g, lv, yardstickOf(record.APIChat).tps)
}

// energyLevels returns the closed loop's levels 1 … 256 (groundTruthStep with noise, 1% unless
// 0) with the power model's telemetry: running = min(c, S).
func energyLevels(noise float64, seed uint64) []Level {
	levels := groundTruthStep(energyS, geometricLevels(256), noise, seed, energyBase, energyPerSeq)
	for i := range levels {
		running := float64(min(levels[i].Concurrency, energyS))
		withPower(&levels[i], energyIdleW+(energyMaxW-energyIdleW)*running/energyS, 20)
	}
	return levels
}

// idleMeta is a run's meta with an idle reading of energyIdleW.
func idleMeta() Meta {
	return Meta{Name: "energy", GPUIdle: &record.GPUStats{Source: record.GPUFromDCGM, Samples: 10, PowerMeanW: energyIdleW, PowerP95W: energyIdleW}}
}

// logInterp interpolates get over the valid levels (sorted by concurrency) linearly in log
// concurrency at c: the rule DESIGN §4.16 gives for J per output token at a place on the
// closed loop's axis.
func logInterp(levels []Level, c float64, get func(*Level) float64) float64 {
	for i := 1; i < len(levels); i++ {
		L, F := &levels[i-1], &levels[i]
		if x0, x1 := float64(L.Concurrency), float64(F.Concurrency); c >= x0 && c <= x1 {
			t := math.Log(c/x0) / math.Log(x1/x0)
			return get(L) + t*(get(F)-get(L))
		}
	}
	return math.NaN()
}

func jOf(l *Level) float64     { return float64(l.GPU.JPerOutputToken) }
func powerOf(l *Level) float64 { return float64(l.GPU.PowerW.Mean) }

// near reports whether got is within rel of want.
func near(got Float, want, rel float64) bool {
	return math.Abs(float64(got)-want) <= rel*math.Abs(want)
}

// TestEnergyClosedLoop reads the energy answers off the power model's levels: the optimum
// near the closed form's b* with an interval that contains it, J per output token at the
// knee, the SLO point and max TPS interpolated between the levels around them, the levels'
// J per output token above idle, and the warning of an SLO point far above the optimum. (Over
// seeds 1–60 the optimum lies within 3.5% of b* every time and its interval covers b* 52 times:
// a residual bootstrap of five levels covers less than its 95%, as the knee's does, DESIGN
// §4.3; seeds 1–3 are among those it covers.)
func TestEnergyClosedLoop(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		levels := energyLevels(0.01, seed)
		before, _ := json.Marshal(levels)
		r := Analyze(levels, idleMeta(), DefaultOptions())
		if after, _ := json.Marshal(levels); string(after) != string(before) {
			t.Fatal("Analyze modified its input levels")
		}
		e := r.Energy
		if e == nil {
			t.Fatalf("seed %d: no energy", seed)
		}
		if e.Source != record.GPUFromDCGM || e.GPUs != 1 || e.IdleW != energyIdleW {
			t.Errorf("seed %d: energy source %q gpus %d idle %v, want dcgm, 1, 120", seed, e.Source, e.GPUs, e.IdleW)
		}
		want := energyOptimumTrue()
		opt := e.Optimal
		if !near(opt.X, want, 0.15) || opt.Interval == nil || !(opt.Interval[0] <= Float(want) && Float(want) <= opt.Interval[1]) ||
			!(opt.Interval[0] <= opt.X && opt.X <= opt.Interval[1]) {
			t.Errorf("seed %d: optimum %v interval %v, want %.2f ± 15%% inside it", seed, opt.X, opt.Interval, want)
		}
		if got := logInterp(r.Levels, float64(opt.X), jOf); !near(opt.JPerOutputToken, got, 1e-9) {
			t.Errorf("seed %d: optimum J/token %v, want %v interpolated at %v", seed, opt.JPerOutputToken, got, opt.X)
		}
		if r.Knee == nil || e.AtKnee.X != r.Knee.Concurrency {
			t.Fatalf("seed %d: at the knee %v, knee %+v", seed, e.AtKnee, r.Knee)
		}
		k := float64(r.Knee.Concurrency)
		if !near(e.AtKnee.JPerOutputToken, logInterp(r.Levels, k, jOf), 1e-9) || !near(e.AtKnee.PowerW, logInterp(r.Levels, k, powerOf), 1e-9) {
			t.Errorf("seed %d: at the knee %+v", seed, e.AtKnee)
		}
		top := slices.IndexFunc(r.Levels, func(l Level) bool { return l.Concurrency == r.Throughput.MaxTPSConcurrency })
		if e.AtMaxTPS.X != Float(r.Throughput.MaxTPSConcurrency) || e.AtMaxTPS.JPerOutputToken != r.Levels[top].GPU.JPerOutputToken {
			t.Errorf("seed %d: at max TPS %+v, want level %d's", seed, e.AtMaxTPS, r.Throughput.MaxTPSConcurrency)
		}
		// The default SLO (TTFT p95 ≤ 2 s) holds up to S = 64 and breaks at 128, where the
		// queue adds seconds: J/token there, on the plateau (700 W ÷ 1524 tokens/s = 0.46 J),
		// is 54% above the optimum's (265 W ÷ 889 tokens/s = 0.30 J).
		s := float64(r.SLO.MaxConcurrency)
		if e.AtSLOPoint.X != r.SLO.MaxConcurrency || !near(e.AtSLOPoint.JPerOutputToken, logInterp(r.Levels, s, jOf), 1e-9) {
			t.Errorf("seed %d: at the SLO point %+v, SLO point %v", seed, e.AtSLOPoint, s)
		}
		if !hasWarning(r, "% above the energy-optimal load's") {
			t.Errorf("seed %d: no warning of the SLO point above the optimum: %q", seed, r.Warnings)
		}
		// Above idle: (P − idle) × window ÷ tokens; at 16, P − idle = 580·16/64 = 145 W.
		l16 := r.Levels[4]
		if want := 145 / float64(l16.OutputTPS); l16.Concurrency != 16 || !near(l16.GPU.JPerOutputTokenAboveIdle, want, 1e-9) {
			t.Errorf("seed %d: level %d above idle %v, want %v", seed, l16.Concurrency, l16.GPU.JPerOutputTokenAboveIdle, want)
		}
	}
}

// TestEnergyNearTheSLOPoint: an SLO point a little past the optimum (TPOT p95 ≤ 25 ms breaks
// between 16 and 32) gives no warning, and the plan's energy is derived from the power and J
// per output token there.
func TestEnergyNearTheSLOPoint(t *testing.T) {
	levels := energyLevels(0, 1)
	opts := fewResamples()
	opts.SLO = SLO{TTFTP95: 2 * time.Second, TPOTP95: 25 * time.Millisecond}
	opts.Plan = Plan{OutputTPS: 10000, EnergyCostPerKWh: 0.12}
	r := Analyze(levels, idleMeta(), opts)
	s := float64(r.SLO.MaxConcurrency)
	if !(s > 16 && s < 32) {
		t.Fatalf("SLO point %v, want between 16 and 32", s)
	}
	if hasWarning(r, "above the energy-optimal load's") {
		t.Errorf("warning of the SLO point above the optimum at %v: %q", s, r.Warnings)
	}
	// At 16: P = 120 + 580·16/64 = 265 W, TPS = 16 ÷ 18 ms; at 32: 410 W, 32 ÷ 26 ms.
	t16 := math.Log(s/16) / math.Log(2)
	power := 265 + t16*(410-265)
	j := (265*0.018/16)*(1-t16) + (410*0.026/32)*t16
	c := r.Capacity
	if c == nil {
		t.Fatal("no plan")
	}
	replicas := math.Ceil(10000 / float64(r.SLO.TPS))
	if c.ReplicasAtSLO != Float(replicas) || !near(c.PowerPerReplicaW, power, 1e-9) || !near(c.FleetPowerKW, power*replicas/1000, 1e-9) ||
		!near(c.KWhPerMOutputTokens, j*1e6/3.6e6, 1e-9) || !near(c.EnergyCostPerMTokens, j*1e6/3.6e6*0.12, 1e-9) {
		t.Errorf("plan %+v; want %v replicas of %.1f W, %.4f kWh per 1M tokens at $0.12", *c, replicas, power, j*1e6/3.6e6)
	}
	// Without a price, no energy cost (absent from analysis.json).
	opts.Plan.EnergyCostPerKWh = 0
	r = Analyze(levels, idleMeta(), opts)
	b, _ := json.Marshal(r.Capacity)
	if r.Capacity.EnergyCostPerMTokens != 0 || strings.Contains(string(b), "energy_cost_per_m_output_tokens") ||
		!strings.Contains(string(b), `"kwh_per_m_output_tokens":`) {
		t.Errorf("plan without a price: %s", b)
	}
}

// TestEnergyTooFewReadings: a level with fewer than three readings has null figures and a
// warning; one whose energy is unknown keeps its power, with the warning; the others answer.
func TestEnergyTooFewReadings(t *testing.T) {
	levels := energyLevels(0, 1)
	withPower(&levels[3], 500, 2) // concurrency 8
	levels[5].GPU.EnergyJ, levels[5].GPU.JPerOutputToken = NaN(), NaN()
	r := Analyze(levels, idleMeta(), fewResamples())
	g := r.Levels[3].GPU
	if g.Samples != 2 || g.PowerW.Mean.OK() || g.EnergyJ.OK() || g.JPerOutputToken.OK() || g.OutputTokensPerJoule.OK() ||
		g.JPerOutputTokenAboveIdle.OK() || g.UtilPct.OK() {
		t.Errorf("level 8 with 2 readings: %+v, want null figures", *g)
	}
	for _, want := range []string{
		"level concurrency 8: GPU energy not measured: 2 distinct readings in the window; next: a shorter gpu_metrics.interval or a longer window (the DCGM exporter refreshes every 30 s unless started with -c 1000)",
		"level concurrency 32: GPU energy not measured: 20 distinct readings in the window; next: a shorter gpu_metrics.interval or a longer window (the DCGM exporter refreshes every 30 s unless started with -c 1000)",
	} {
		if !slices.Contains(r.Warnings, want) {
			t.Errorf("warnings %q lack %q", r.Warnings, want)
		}
	}
	if r.Energy == nil || !r.Energy.Optimal.X.OK() || r.Energy.Optimal.X == 8 {
		t.Errorf("energy %+v, want an optimum from the other levels", r.Energy)
	}
	b, _ := json.Marshal(r.Levels[3])
	if !strings.Contains(string(b), `"gpu":{"source":"dcgm","gpus":1,"samples":2,"power_w":{"mean":null,"p95":null}`) ||
		!strings.Contains(string(b), `"j_per_output_token":null`) {
		t.Errorf("level 8's gpu: %s", b)
	}
}

// TestEnergyAbsent: without GPU telemetry no level has gpu, the result no energy and the plan
// no power: analysis.json is what it was.
func TestEnergyAbsent(t *testing.T) {
	opts := fewResamples()
	opts.Plan = Plan{OutputTPS: 10000, EnergyCostPerKWh: 0.12}
	r := Analyze(groundTruth(32, geometricLevels(256), 0.01, 1), Meta{}, opts)
	if r.Energy != nil || r.Capacity == nil {
		t.Fatalf("energy %+v capacity %v", r.Energy, r.Capacity)
	}
	b, _ := json.Marshal(r)
	for _, key := range []string{`"gpu"`, `"energy"`, `"power_per_replica_w"`, `"fleet_power_kw"`, `"kwh_per_m_output_tokens"`, `"energy_cost_per_m_output_tokens"`} {
		if strings.Contains(string(b), key) {
			t.Errorf("analysis.json without telemetry has %s", key)
		}
	}
}

// TestEnergyJSON: the keys of issue 24 (item 6) in analysis.json.
func TestEnergyJSON(t *testing.T) {
	opts := fewResamples()
	opts.Plan = Plan{OutputTPS: 10000, EnergyCostPerKWh: 0.12}
	r := Analyze(energyLevels(0.01, 1), idleMeta(), opts)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{
		`"gpu":{"source":"dcgm","gpus":1,"samples":20,"power_w":{"mean":`, `"power_per_gpu_w":{"mean":`, `"energy_j":`,
		`"energy_source":"counter"`, `"j_per_output_token":`, `"j_per_output_token_above_idle":`, `"j_per_request":`,
		`"output_tokens_per_joule":`, `"util":`, `"sm_active":null`,
		`"energy":{"source":"dcgm","gpus":1,"idle_w":120,"optimal":{"x":`, `"interval":[`, `"at_knee":{"x":`,
		`"at_slo_point":{"x":`, `"at_max_tps":{"x":`, `"power_w":`,
		`"power_per_replica_w":`, `"fleet_power_kw":`, `"kwh_per_m_output_tokens":`, `"energy_cost_per_m_output_tokens":`,
	} {
		if !strings.Contains(string(b), key) {
			t.Errorf("analysis.json lacks %s", key)
		}
	}
	var back Result
	if err := json.Unmarshal(b, &back); err != nil || back.Energy == nil || back.Energy.Optimal.X != r.Energy.Optimal.X ||
		*back.Energy.Optimal.Interval != *r.Energy.Optimal.Interval || back.Levels[0].GPU.JPerOutputToken != r.Levels[0].GPU.JPerOutputToken {
		t.Errorf("analysis.json read back: %v, energy %+v", err, back.Energy)
	}
}

// TestEnergyRateLevels: on the rate axis, with P = idle + (max − idle) × completion rate ÷
// capacity, J per output token = idle ÷ TPS + (max − idle) ÷ (capacity × tokens per request)
// falls with the rate: the optimum is the last sustained level (the unsustained ones, each
// completing 10/s at 700 W, spend less, 0.70 J, but are no load to run at), and at the
// capacity, 10 requests/s, J per output token lies halfway between 8's and 12's.
func TestEnergyRateLevels(t *testing.T) {
	const capacity = 10.0
	var levels []Level
	for _, x := range []float64{1, 2, 4, 6, 8, 12, 16} {
		y := math.Min(x, capacity)
		l := rateLevel(x, y, 50, x <= 8)
		withPower(&l, energyIdleW+(energyMaxW-energyIdleW)*y/capacity, 20)
		levels = append(levels, l)
	}
	r := Analyze(levels, idleMeta(), fewResamples())
	e := r.Energy
	if e == nil || r.Rate == nil {
		t.Fatal("no energy or no rate answer")
	}
	// At 8 requests/s: (120 + 580·0.8) W ÷ 800 tokens/s = 0.73 J.
	if e.Optimal.X != 8 || !near(e.Optimal.JPerOutputToken, 584.0/800, 1e-9) || e.Optimal.Interval == nil ||
		!(e.Optimal.Interval[0] <= 8 && 8 <= e.Optimal.Interval[1]) {
		t.Errorf("optimum %+v interval %v, want 8 requests/s at 0.73 J", e.Optimal, e.Optimal.Interval)
	}
	if e.AtKnee.X != r.Rate.CapacityRPS || !near(e.AtKnee.JPerOutputToken, (584.0/800+700.0/1000)/2, 1e-9) {
		t.Errorf("at the capacity %+v, capacity %v: want halfway between 8's and 12's J/token", e.AtKnee, r.Rate.CapacityRPS)
	}
	// The SLO point (none breached: TTFT 50 ms) is the capacity's; linear in the rate inside.
	if x := float64(r.Rate.SLORPS); e.AtSLOPoint.X != r.Rate.SLORPS || !e.AtSLOPoint.JPerOutputToken.OK() || !(x > 0) {
		t.Errorf("at the SLO point %+v (SLO %v)", e.AtSLOPoint, x)
	}
	// Linear in the rate: halfway between 4 and 6, P and TPS are those of 5 requests/s.
	pts := []point{}
	for i := range r.Levels[:5] {
		pts = append(pts, point{x: float64(r.Levels[i].OfferedRPS), lv: &r.Levels[i]})
	}
	a := &analyzer{res: &r}
	if got := a.energyAt(pts, 5); !near(got.PowerW, 120+580*0.5, 1e-9) || !near(got.JPerOutputToken, (352.0/400+468.0/600)/2, 1e-9) {
		t.Errorf("at 5 requests/s %+v", got)
	}
}

// TestSummarizeGPU: a level's GPU figures from its window's telemetry (handLevel: 13 output
// tokens and 2 completions in a 10 s window), nil without telemetry.
func TestSummarizeGPU(t *testing.T) {
	run, recs := handLevel()
	lv := Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	if lv.GPU != nil {
		t.Errorf("without telemetry: gpu %+v", *lv.GPU)
	}
	e, util, sm := 3000.0, 55.0, 0.4
	run.GPU = &record.GPUStats{Source: record.GPUFromNvidiaSMI, From: "nvidia-smi", Samples: 10,
		GPUs:       []record.GPUReading{{GPU: record.GPU{Index: "0"}, PowerMeanW: 150}, {GPU: record.GPU{Index: "1"}, PowerMeanW: 150}},
		PowerMeanW: 300, PowerP95W: 350, EnergyJ: &e, EnergySource: record.EnergyFromPower, UtilPct: &util, SMActive: &sm}
	lv = Summarize(record.GroupRecords([]record.LevelRun{run}, recs), DefaultOptions())[0]
	g := lv.GPU
	if g == nil {
		t.Fatal("no gpu figures")
	}
	if g.Source != record.GPUFromNvidiaSMI || g.GPUs != 2 || g.Samples != 10 || g.PowerW != (PowerStats{300, 350}) ||
		g.PowerPerGPUW != (PowerStats{150, 175}) || g.EnergyJ != 3000 || g.EnergySource != record.EnergyFromPower ||
		g.UtilPct != 55 || g.SMActive != 0.4 || g.JPerOutputTokenAboveIdle.OK() {
		t.Errorf("gpu %+v", *g)
	}
	if !near(g.JPerOutputToken, 3000.0/13, 1e-12) || !near(g.JPerRequest, 1500, 1e-12) || !near(g.OutputTokensPerJoule, 13.0/3000, 1e-12) {
		t.Errorf("J/token %v (want 3000/13), J/request %v (1500), tokens/J %v (13/3000)", g.JPerOutputToken, g.JPerRequest, g.OutputTokensPerJoule)
	}
}

// TestEnergyDegenerate: few or unusable GPU figures give null answers and warnings, never a
// panic: one level with energy is the optimum itself; fewer than five give no interval (a
// warning when resamples were asked for); levels whose every figure is null leave every point
// null.
func TestEnergyDegenerate(t *testing.T) {
	noBoot := DefaultOptions()
	noBoot.Bootstrap = 0
	cases := []struct {
		name  string
		keep  []int // the levels of energyLevels (1 … 256) that keep their energy
		opts  Options
		check func(t *testing.T, r Result)
	}{
		{"one level", []int{4}, fewResamples(), func(t *testing.T, r Result) {
			if o := r.Energy.Optimal; o.X != 16 || o.Interval != nil || !near(o.JPerOutputToken, 265*0.018/16, 1e-9) {
				t.Errorf("optimum %+v, want level 16 (0.298 J) without an interval", o)
			}
		}},
		{"four levels", []int{1, 2, 3, 4}, fewResamples(), func(t *testing.T, r Result) {
			if r.Energy.Optimal.Interval != nil || !hasWarning(r, "energy: 4 valid levels with a J per output token: no 95% interval") {
				t.Errorf("optimum %+v, warnings %q", r.Energy.Optimal, r.Warnings)
			}
		}},
		{"no resamples", []int{0, 1, 2, 3, 4, 5, 6}, noBoot, func(t *testing.T, r Result) {
			if r.Energy.Optimal.Interval != nil || hasWarning(r, "no 95% interval of the energy-optimal load") || !r.Energy.Optimal.X.OK() {
				t.Errorf("optimum %+v, warnings %q", r.Energy.Optimal, r.Warnings)
			}
		}},
		{"none measured", nil, DefaultOptions(), func(t *testing.T, r Result) {
			e := r.Energy
			for _, p := range []EnergyPoint{e.Optimal, e.AtKnee, e.AtSLOPoint, e.AtMaxTPS} {
				if p.JPerOutputToken.OK() || p.PowerW.OK() {
					t.Errorf("point %+v, want null figures", p)
				}
			}
			if n := strings.Count(strings.Join(r.Warnings, "\n"), "GPU energy not measured: 1 distinct reading in the window"); n != 9 {
				t.Errorf("%d warnings of unmeasured energy, want 9: %q", n, r.Warnings)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			levels := energyLevels(0, 1)
			for i := range levels {
				if !slices.Contains(tc.keep, i) {
					withPower(&levels[i], 300, 1)
				}
			}
			r := Analyze(levels, Meta{}, tc.opts)
			if r.Energy == nil || r.Energy.IdleW.OK() {
				t.Fatalf("energy %+v, want one without an idle reading", r.Energy)
			}
			tc.check(t, r)
		})
	}
}

// TestEnergyOptimumBetweenNeighbours: where the fitted curve puts its lowest point away from
// the best level's neighbours (here one level measured far less than the model, a
// spike the curve a/x + b + c·x cannot follow), the optimum is the best level, without an
// interval: on a curve with one lowest point it lies between them.
func TestEnergyOptimumBetweenNeighbours(t *testing.T) {
	for _, spike := range []int{1, 7} { // concurrency 2 and 128: fits that miss without the rule
		levels := energyLevels(0, 1)
		withPower(&levels[spike], 1, 20) // 1 W: the lowest J per output token by far
		e := Analyze(levels, idleMeta(), fewResamples()).Energy
		if e == nil {
			t.Fatal("no energy")
		}
		lo, hi := float64(levels[max(spike-1, 0)].Concurrency), float64(levels[spike+1].Concurrency)
		if x := float64(e.Optimal.X); !(x >= lo && x <= hi) {
			t.Errorf("spike at concurrency %d: optimum at %v, want between %v and %v", levels[spike].Concurrency, x, lo, hi)
		}
	}
}

// fewResamples are the default options with 50 bootstrap resamples: for the tests that check
// where the answers are, not their intervals' widths (the knee's and the optimum's bootstraps
// are most of an Analyze's time under -race).
func fewResamples() Options {
	o := DefaultOptions()
	o.Bootstrap = 50
	return o
}

// TestEmbeddingsEnergy: an embeddings level's J per token is per input token, the yardstick's
// tokens: 4 workers × 99 answers of 100 tokens complete inside the 1 s window (embedRecords),
// so 400 J over 39,600 input tokens; above an idle of 100 W, (400 − 100) J over them.
func TestEmbeddingsEnergy(t *testing.T) {
	const w0 = int64(1e18)
	e := 400.0
	run := record.LevelRun{Index: 0, Concurrency: 4, W0: w0, W1: w0 + int64(time.Second), Steady: true,
		GPU: &record.GPUStats{Source: record.GPUFromNvidiaSMI, From: "nvidia-smi", Samples: 10, PowerMeanW: 400, PowerP95W: 400,
			EnergyJ: &e, EnergySource: record.EnergyFromPower}}
	opts := DefaultOptions()
	opts.API = record.APIEmbeddings
	lvs := Summarize([]record.Level{{Run: run, Records: embedRecords(4, 200, 10*time.Millisecond, 2, 100, w0)}}, opts)
	const tokens = 4 * 99 * 100
	if g := lvs[0].GPU; g == nil || !near(g.JPerOutputToken, e/tokens, 1e-9) || !near(g.OutputTokensPerJoule, tokens/e, 1e-9) {
		t.Fatalf("gpu %+v: want %g J per input token", g, e/tokens)
	}
	meta := Meta{API: record.APIEmbeddings, GPUIdle: &record.GPUStats{Source: record.GPUFromNvidiaSMI, Samples: 10, PowerMeanW: 100, PowerP95W: 100}}
	res := Analyze(lvs, meta, opts)
	if got := res.Levels[0].GPU.JPerOutputTokenAboveIdle; !near(got, (e-100)/tokens, 1e-9) {
		t.Errorf("above idle %v J per input token, want %g", got, (e-100)/tokens)
	}
}
