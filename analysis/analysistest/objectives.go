package analysistest

import (
	"time"

	"github.com/kneecap/kneecap/analysis"
)

// Objectives is the Saturating sweep's levels analyzed (no bootstrap) under SLOs off p95:
// TTFT p99 ≤ 2 s, which binds between levels 32 and 64 (TTFT p99 21.6 ms, then 2765 ms), and
// ITL p50 ≤ 30 ms, which every level meets (ITL p50 ≤ 11.8 ms).
func Objectives() *analysis.Result {
	opts := analysis.DefaultOptions()
	opts.Bootstrap = 0
	opts.SLO = analysis.SLO{TTFTP99: 2 * time.Second, ITLP50: 30 * time.Millisecond}
	s := Saturating()
	res := analysis.Analyze(s.Levels, s.Meta, opts)
	return &res
}
