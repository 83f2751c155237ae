// Package report writes the human-readable results of a kneecap run (DESIGN §5): the console
// summary printed at the end of sweep and analyze, report.md, a self-contained report.html
// with figure cards above the answer and the charts inlined as SVG, and compare.md and
// compare.html for kneecap compare.
//
// Every report opens with the answer — the maximum throughput, the knee with its interval, the
// TTFT blow-up, the SLO point, the operating point, the capacity plan and, with GPU telemetry,
// energy per output token (energy.go) — then the level
// table, the method notes with the formulas of DESIGN §1 beside the metrics, the validity
// checks per level (including the identities E2E ≈ TTFT + TPOT × (N_out − 1),
// QPS ≈ concurrency ÷ mean E2E and output TPS ≈ QPS × mean N_out with their measured error),
// and every warning of the analysis. Values that were not computed print as "—".
//
// report only writes: level summaries are read by package summary, and the charts it inlines
// are rendered by package plots.
package report
