// Package plots draws the charts of a kneecap run (DESIGN §5) with gonum.org/v1/plot:
// throughput, TTFT, TPOT, latency against throughput, QPS, a 2×2 dashboard of the first four,
// the energy per output token and GPU power of a run with GPU telemetry (efficiency),
// and overlays comparing several runs.
//
// Every chart function takes an *analysis.Result and returns a Chart that writes itself as PNG
// or SVG. Values that were not computed (analysis.Float NaN, which is null in analysis.json) are
// skipped, never handed to a plotter. Levels the analysis excluded from its fits (Level.Valid
// false) are drawn with hollow glyphs. A chart with nothing to draw still renders, with a
// "no data" note, so a report can always embed it. RenderAll, RenderCompare and RenderPareto
// return every chart rendered in memory (File, an io.WriterTo), each at its default size and,
// for report.html on a phone, narrow (File.Narrow); plots writes no file, the caller saves
// the default ones and inlines the SVGs (SVGs).
//
// Concurrency axes use a base-2 logarithmic scale with ticks at powers of two, because sweeps
// double concurrency; the throughput knee is "one more doubling adds less than knee_gain".
// Output is deterministic: SVG carries no timestamps and text uses Liberation Sans, which
// gonum/plot embeds (the SVG names generic fallbacks after it); PNG is at twice 96 dpi. The
// legend is a strip below the data area; point labels are placed apart when a chart is drawn
// (labels.go); every axis range ends on a tick (axes.go).
package plots
