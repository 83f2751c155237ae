package summary

import (
	"math"
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/analysis"
)

// The GPU columns of a level-summary CSV (DESIGN §4.13, §4.16): appended after every other
// column of either table, and written only when some level has GPU figures, so that the
// summary.csv of a run without GPU telemetry keeps its columns.

// gpuColumn is a GPU column and where it lives in analysis.LevelGPU; signed is true for the
// one that may be negative (J per output token above idle, when a level drew less than the
// idle reading).
type gpuColumn struct {
	name   string
	of     func(*analysis.LevelGPU) *analysis.Float
	signed bool
}

// gpuColumns are the GPU columns, in order: the GPUs' total power (mean and p95, W), their
// energy over the window (J), J per output token (total and above idle), output tokens per
// joule and the GPU utilisation (%).
var gpuColumns = []gpuColumn{
	{"gpu_power_mean_w", func(g *analysis.LevelGPU) *analysis.Float { return &g.PowerW.Mean }, false},
	{"gpu_power_p95_w", func(g *analysis.LevelGPU) *analysis.Float { return &g.PowerW.P95 }, false},
	{"gpu_energy_j", func(g *analysis.LevelGPU) *analysis.Float { return &g.EnergyJ }, false},
	{"j_per_output_token", func(g *analysis.LevelGPU) *analysis.Float { return &g.JPerOutputToken }, false},
	{"j_per_output_token_above_idle", func(g *analysis.LevelGPU) *analysis.Float { return &g.JPerOutputTokenAboveIdle }, true},
	{"output_tokens_per_joule", func(g *analysis.LevelGPU) *analysis.Float { return &g.OutputTokensPerJoule }, false},
	{"gpu_util_pct", func(g *analysis.LevelGPU) *analysis.Float { return &g.UtilPct }, false},
}

// gpuColumnNames returns the names of gpuColumns.
func gpuColumnNames() []string {
	out := make([]string, len(gpuColumns))
	for i, c := range gpuColumns {
		out[i] = c.name
	}
	return out
}

// withGPU reports whether some level written has GPU figures (analysis.Level GPU): the GPU
// columns are written then.
func withGPU(levels []analysis.Level) bool {
	return slices.ContainsFunc(levels, func(l analysis.Level) bool { return l.GPU != nil && !l.Superseded })
}

// gpuCells are l's cells of gpuColumns: empty without its GPU figures.
func gpuCells(l *analysis.Level) []string {
	out := make([]string, len(gpuColumns))
	if l.GPU == nil {
		return out
	}
	for i, c := range gpuColumns {
		out[i] = csvNum(*c.of(l.GPU))
	}
	return out
}

// parseFinite parses cell, a number that must be finite; fail formats the error naming the
// file, line and column.
func parseFinite(cell string, fail func(string, ...any) error) (float64, error) {
	v, err := strconv.ParseFloat(cell, 64)
	switch {
	case err != nil:
		return 0, fail("%q is not a number", cell)
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fail("%q is not finite", cell)
	}
	return v, nil
}

// gpuCell stores the (trimmed) cell of a GPU column col in lv and reports whether col is one:
// a finite number, not negative but for j_per_output_token_above_idle; empty is null. A row
// with any GPU cell set has GPU figures (analysis.NoLevelGPU, with those cells); one with
// none has none.
func gpuCell(lv *analysis.Level, col, cell string, fail func(string, ...any) error) (bool, error) {
	i := slices.IndexFunc(gpuColumns, func(c gpuColumn) bool { return c.name == col })
	if i < 0 {
		return false, nil
	}
	if cell == "" {
		return true, nil
	}
	v, err := parseFinite(cell, fail)
	switch {
	case err != nil:
		return true, err
	case v < 0 && !gpuColumns[i].signed:
		return true, fail("%q: must not be negative", cell)
	}
	if lv.GPU == nil {
		lv.GPU = analysis.NoLevelGPU()
	}
	*gpuColumns[i].of(lv.GPU) = analysis.Float(v)
	return true, nil
}
