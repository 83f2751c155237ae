package report

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// Energy per output token in the reports (DESIGN §4.16, §5.2): the answer's sentences, the
// Energy and Fleet power cards, the Energy section, and the level tables' J/token and GPU
// power columns. Each appears only when the run read GPU telemetry: a run without it reads as
// before.

// hasGPU reports whether some level of res has GPU figures: only then do the level tables show
// J/token and GPU power.
func hasGPU(res *analysis.Result) bool {
	return slices.ContainsFunc(res.Levels, func(l analysis.Level) bool { return l.GPU != nil })
}

// fjoule formats J per output token with three significant digits: 0.196, 1.25, "—".
func fjoule(v analysis.Float) string {
	if !v.OK() || v >= 100 || v <= -100 {
		return fnum(v)
	}
	return strconv.FormatFloat(float64(v), 'g', 3, 64)
}

// fusdSmall formats dollars as fusd does, below a dollar with three significant digits
// ("$0.00875"): the electricity of 1M tokens costs cents.
func fusdSmall(v analysis.Float) string {
	if !v.OK() || v >= 1 || v <= 0 {
		return fusd(v)
	}
	return "$" + strconv.FormatFloat(float64(v), 'g', 3, 64)
}

// gpuCell formats a GPU figure of l by f, "—" for a level without GPU figures.
func gpuCell(l *analysis.Level, get func(*analysis.LevelGPU) analysis.Float, f func(analysis.Float) string) string {
	if l.GPU == nil {
		return dash
	}
	return f(get(l.GPU))
}

// jPerToken and gpuPower are the level tables' energy columns: J per output token and the
// GPUs' mean total power in W.
func jPerToken(l *analysis.Level) string {
	return gpuCell(l, func(g *analysis.LevelGPU) analysis.Float { return g.JPerOutputToken }, fjoule)
}

func gpuPower(l *analysis.Level) string {
	return gpuCell(l, func(g *analysis.LevelGPU) analysis.Float { return g.PowerW.Mean }, fint)
}

// withEnergy inserts J per output token and GPU power before the last column (valid) of a
// level table whose rows are rowLevels(res), when some level has GPU figures.
func withEnergy(t table, res *analysis.Result) table {
	levels := rowLevels(res)
	if !hasGPU(res) || len(t.Header) == 0 || len(levels) != len(t.Rows) {
		return t
	}
	at := len(t.Header) - 1
	t.Header = slices.Insert(slices.Clone(t.Header), at, "J per "+throughputWord(res)+" token", "GPU power (W)")
	for i := range levels {
		t.Rows[i] = slices.Insert(slices.Clone(t.Rows[i]), at, jPerToken(&levels[i]), gpuPower(&levels[i]))
	}
	return t
}

// colJTok and colGPUW are the console's energy columns (--wide, LevelTable.WithEnergy).
var (
	colJTok = consoleColumn{"J/tok", 5, jPerToken}
	colGPUW = consoleColumn{"GPU W", 5, gpuPower}
)

// WithEnergy returns t with J per output token and the GPUs' power before its valid column
// (the console's --wide table shows them when some level has GPU figures). A table without
// that column is returned as it is.
func (t LevelTable) WithEnergy() LevelTable {
	i := slices.IndexFunc(t.cols, func(c consoleColumn) bool { return c.head == colValid.head })
	if i < 0 {
		return t
	}
	return LevelTable{cols: slices.Insert(slices.Clone(t.cols), i, colJTok, colGPUW),
		widths: slices.Insert(slices.Clone(t.widths), i, colJTok.width, colGPUW.width)}
}

// consoleEnergy reports whether the console's level table shows the energy columns: --wide,
// when some level has GPU figures.
func consoleEnergy(res *analysis.Result, wide bool) bool { return wide && hasGPU(res) }

// place formats x on res's load axis as the answers do: "concurrency 10.3", "12.0 requests/s".
func place(res *analysis.Result, x analysis.Float) string {
	ax := res.Axis()
	if ax.IsRate() {
		return ax.At(frate(x))
	}
	return ax.At(fconc(x))
}

// kneeName is what Energy.AtKnee is at: the knee, or an arrival-rate run's capacity.
func kneeName(res *analysis.Result) string {
	if res.Mode.IsRate() {
		return "the capacity"
	}
	return "the knee"
}

// pointText states J per output token at p: "0.196 J at concurrency 10.3 (95% interval
// 8.90–12.1)" (the optimum's interval), "—" when not computed.
func pointText(res *analysis.Result, p analysis.EnergyPoint) string {
	if !p.JPerOutputToken.OK() || !p.X.OK() {
		return dash
	}
	return fjoule(p.JPerOutputToken) + " J " + placeText(res, p)
}

// placeText states where p is: "at concurrency 10.3 (95% interval 8.90–12.1)".
func placeText(res *analysis.Result, p analysis.EnergyPoint) string {
	t := "at " + place(res, p.X)
	if iv := p.Interval; iv != nil && iv[0].OK() && iv[1].OK() {
		lo, hi := fspan(iv[0], iv[1])
		t += fmt.Sprintf(" (95%% interval %s–%s)", lo, hi)
	}
	return t
}

// energyPoints are J per output token at the knee, the SLO point and max TPS, each "0.263 J at
// the knee", those computed.
func energyPoints(res *analysis.Result, e *analysis.Energy) []string {
	var out []string
	for _, p := range []struct {
		at string
		p  analysis.EnergyPoint
	}{{kneeName(res), e.AtKnee}, {"the SLO point", e.AtSLOPoint}, {"max TPS", e.AtMaxTPS}} {
		if p.p.JPerOutputToken.OK() {
			out = append(out, fjoule(p.p.JPerOutputToken)+" J at "+p.at)
		}
	}
	return out
}

// gpusCounted names the GPUs the energy was read from: "1 GPU (dcgm)".
func gpusCounted(e *analysis.Energy) string {
	t := strconv.Itoa(e.GPUs) + " GPU"
	if e.GPUs != 1 {
		t += "s"
	}
	if e.Source != "" {
		t += " (" + e.Source + ")"
	}
	return t
}

// gpusNamed names the GPUs counted, grouped by model and host, and the gpu_metrics.match
// filter that selected them: ": 8 × NVIDIA H100 80GB HBM3 on node-7 (gpu 0, 1, …), selected
// by gpu_metrics.match Hostname=node-7"; "" when the run names none.
func gpusNamed(m analysis.Meta) string {
	type group struct {
		model, host string
		ids         []string
	}
	var groups []*group
	for _, g := range m.GPUs {
		i := slices.IndexFunc(groups, func(x *group) bool { return x.model == g.Model && x.host == g.Host })
		if i < 0 {
			groups = append(groups, &group{model: g.Model, host: g.Host})
			i = len(groups) - 1
		}
		groups[i].ids = append(groups[i].ids, g.Index)
	}
	var parts []string
	for _, g := range groups {
		t := fmt.Sprintf("%d × %s", len(g.ids), cmp.Or(g.model, "GPU"))
		if g.host != "" {
			t += " on " + g.host
		}
		parts = append(parts, t+" (gpu "+strings.Join(g.ids, ", ")+")")
	}
	t := ""
	if len(parts) > 0 {
		t = ": " + strings.Join(parts, "; ")
	}
	if m.GPUMatch != "" {
		t += ", selected by gpu_metrics.match " + m.GPUMatch
	}
	return t
}

// energySentences are the answer's energy sentences when res read GPU telemetry: J per output
// token at its lowest and at the other answers, the idle power, then the plan's power and
// energy; none otherwise.
func energySentences(res *analysis.Result) []string {
	e := res.Energy
	if e == nil {
		return nil
	}
	t := "Energy per " + throughputWord(res) + " token, over " + gpusCounted(e) + ": "
	if opt := pointText(res, e.Optimal); opt != dash {
		t += "lowest " + opt
	} else {
		t += "no lowest point found (see warnings)"
	}
	if pts := energyPoints(res, e); len(pts) > 0 {
		t += "; " + joinAnd(pts)
	}
	if e.IdleW.OK() {
		t += "; idle power " + fnum(e.IdleW) + " W"
	}
	s := []string{t + "."}
	if p := phrases(planEnergy(res.Capacity), ""); len(p) > 0 {
		s = append(s, "At the SLO point the plan's GPUs draw "+joinAnd(p)+".")
	}
	return s
}

// planFigure is one energy figure of the capacity plan: its name in the Energy table, its
// value, and how the answer phrases it.
type planFigure struct{ name, value, phrase string }

// planEnergy returns the capacity plan's energy figures that were computed: the power of a
// replica and of the fleet at the SLO point, kWh and the electricity's $ per 1M output tokens.
func planEnergy(c *analysis.Capacity) []planFigure {
	if c == nil {
		return nil
	}
	var out []planFigure
	for _, f := range []struct {
		v          analysis.Float
		name, unit string
		format     func(analysis.Float) string
		phrase     string
	}{
		{c.PowerPerReplicaW, "power per replica", " W", fnum, " a replica"},
		{c.FleetPowerKW, "fleet power", " kW", fnum, " for the fleet"},
		{c.KWhPerMOutputTokens, "energy per 1M output tokens", " kWh", fjoule, " per 1M output tokens"},
		{c.EnergyCostPerMTokens, "electricity per 1M output tokens", "", fusdSmall, " of electricity per 1M output tokens"},
	} {
		if f.v.OK() && f.v != 0 {
			v := f.format(f.v) + f.unit
			out = append(out, planFigure{f.name, v, v + f.phrase})
		}
	}
	return out
}

// phrases returns the answer's phrases of fs, leaving out the one named skip.
func phrases(fs []planFigure, skip string) []string {
	var out []string
	for _, f := range fs {
		if f.name != skip {
			out = append(out, f.phrase)
		}
	}
	return out
}

// energyCards are report.html's Energy card (J per output token at the optimum, the other
// answers and the idle power) and, when the plan has its power, the Fleet power card; none
// without energy answers.
func energyCards(res *analysis.Result) []card {
	e := res.Energy
	if e == nil {
		return nil
	}
	c := card{Label: "Energy", Value: dash, Detail: "no optimum found (see warnings)"}
	if p := e.Optimal; p.JPerOutputToken.OK() && p.X.OK() {
		c.Value, c.Unit = fjoule(p.JPerOutputToken), "J/token"
		c.Detail = strings.Join(append([]string{"lowest, " + placeText(res, p)}, energyPoints(res, e)...), " · ")
	}
	if e.IdleW.OK() {
		c.Detail += " · idle " + fnum(e.IdleW) + " W"
	}
	cs := []card{c}
	if cp := res.Capacity; cp != nil && cp.FleetPowerKW.OK() && cp.FleetPowerKW != 0 {
		det := append([]string{"the plan's GPUs at the SLO point"}, phrases(planEnergy(cp), "fleet power")...)
		cs = append(cs, card{Label: "Fleet power", Value: fnum(cp.FleetPowerKW), Unit: "kW", Detail: strings.Join(det, " · ")})
	}
	return cs
}

// energyNote is the note under the Energy section's table; the tokens are res's yardstick's
// (throughputWord: output, or an embeddings run's input).
func energyNote(res *analysis.Result) string {
	return fmt.Sprintf("J per %[1]s token = the GPUs' energy over a level's window ÷ its %[1]s tokens; above idle, less the idle power over the window. The optimum is the lowest J per %[1]s token along the load axis, with a bootstrap 95%% interval of its place; the other points are interpolated between the levels around them; the plan's power is that of one replica at the SLO point (DESIGN §4.16).",
		throughputWord(res))
}

// energyTable lists the energy answers of res (Energy set): the GPUs counted, the idle power,
// J per output token and power at the optimum, the knee, the SLO point and max TPS, and the
// plan's energy.
func energyTable(res *analysis.Result) table {
	e := res.Energy
	t := table{Header: []string{"figure", "value"}, Class: "text"}
	add := func(k, v string) { t.Rows = append(t.Rows, []string{k, v}) }
	add("GPUs counted", gpusCounted(e)+gpusNamed(res.Meta))
	if e.IdleW.OK() {
		add("idle power", fnum(e.IdleW)+" W")
	}
	for _, p := range []struct {
		name string
		p    analysis.EnergyPoint
	}{{"energy optimum (lowest)", e.Optimal}, {"at " + kneeName(res), e.AtKnee}, {"at the SLO point", e.AtSLOPoint}, {"at max TPS", e.AtMaxTPS}} {
		v := dash
		if p.p.JPerOutputToken.OK() && p.p.X.OK() {
			v = fjoule(p.p.JPerOutputToken) + " J/token " + placeText(res, p.p)
		}
		if v != dash && p.p.PowerW.OK() {
			v += ", " + fnum(p.p.PowerW) + " W"
		}
		add(p.name, v)
	}
	for _, f := range planEnergy(res.Capacity) {
		add("plan: "+f.name, f.value)
	}
	return t
}
