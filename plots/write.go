package plots

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"

	"gonum.org/v1/plot/vg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// names returns the base names of the charts RenderAll renders, in order (DESIGN §5).
func names() []string {
	return []string{"throughput", "ttft", "tpot", "latency_vs_throughput", "qps", "dashboard"}
}

// compareNames returns the base names of the overlay charts RenderCompare renders, in order.
func compareNames() []string { return []string{"compare_throughput", "compare_latency"} }

// formats returns the formats RenderAll and RenderCompare render every chart in, in order.
func formats() []string { return []string{"png", "svg"} }

// Build returns the chart called name (one of NamesFor(res.Mode), or "efficiency") for res;
// "dashboard" is the rate dashboard for an arrival-rate run.
func Build(name string, res *analysis.Result) (Chart, error) {
	rate := res != nil && res.Mode.IsRate()
	switch name {
	case efficiencyName:
		return efficiency(res)
	case "rate_throughput":
		return rateThroughput(res)
	case "rate_ttft":
		return rateTTFT(res)
	case "rate_e2e":
		return rateE2E(res)
	case "rate_lag":
		return rateLag(res)
	case "dashboard":
		if rate {
			return rateDashboard(res)
		}
		if whole(res) {
			return latencyDashboard(res)
		}
		return Dashboard(res)
	case "latency":
		return latency(res)
	case "throughput":
		return throughput(res)
	case "ttft":
		return ttft(res)
	case "tpot":
		return tpot(res)
	case "latency_vs_throughput":
		return latencyVsThroughput(res)
	case "qps":
		return qps(res)
	}
	return nil, fmt.Errorf("plots: unknown chart %q", name)
}

// size returns the file size of the chart called name.
func size(name string) (w, h vg.Length) {
	switch name {
	case "dashboard":
		return dashboardWidth, dashboardHeight
	case efficiencyName:
		return Width, efficiencyHeight
	}
	return Width, Height
}

// Render encodes c as an image of w × h in format "png" or "svg".
func Render(c Chart, w, h vg.Length, format string) ([]byte, error) {
	wt, err := c.WriterTo(w, h, format)
	if err != nil {
		return nil, fmt.Errorf("plots: render %s: %w", format, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("plots: render %s: %w", format, err)
	}
	return buf.Bytes(), nil
}

// File is one rendered chart held in memory, ready to be saved as FileName() or embedded.
type File struct {
	// Name is the chart's base name: one of NamesFor(mode), "efficiency" or compareNames().
	Name string
	// Format is "png" or "svg".
	Format string
	// Data is the encoded image.
	Data []byte
	// Narrow marks a chart's narrow rendering, SVG at NarrowWidth × NarrowHeight, which
	// report.html shows on a phone in place of the SVG of the default size: it is inlined
	// (SVGs); the commands save none as a file of its own.
	Narrow bool
}

// FileName returns the chart's file name, Name.Format (such as "throughput.svg"), and
// Name.narrow.Format for a Narrow rendering ("throughput.narrow.svg"), so that it never
// names the default-size file.
func (f File) FileName() string {
	if f.Narrow {
		return f.Name + ".narrow." + f.Format
	}
	return f.Name + "." + f.Format
}

// WriteTo writes the encoded image to w; File is an io.WriterTo, as gonum/plot's writers are.
func (f File) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(f.Data)
	return int64(n), err
}

// RenderAll renders every chart of NamesFor(res.Mode) for res, then "efficiency" when res
// has energy answers (res.Energy), at its default size (Width × Height, the dashboard
// dashboardWidth × dashboardHeight, the efficiency chart Width × efficiencyHeight) in every
// format of Formats(), then — but for the dashboard — as narrow SVG (renderFormats): in that
// order, PNG, SVG and the narrow SVG for each chart. It writes no file: the caller saves or
// embeds them. An error names the chart ("plots: NAME: …") when rendering
// fails.
func RenderAll(res *analysis.Result) ([]File, error) {
	return RenderAllContext(context.Background(), res)
}

// RenderAllContext is RenderAll that an interrupt ends: once ctx is done it stops before the
// next chart (the one in progress finishes) and returns ctx's error and no files.
func RenderAllContext(ctx context.Context, res *analysis.Result) ([]File, error) {
	var files []File
	for _, name := range chartsOf(res) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		c, err := Build(name, res)
		if err != nil {
			return nil, err
		}
		w, h := size(name)
		rendered, err := renderFormats(name, c, w, h)
		if err != nil {
			return nil, fmt.Errorf("plots: %w", err)
		}
		files = append(files, rendered...)
	}
	return files, nil
}

// chartsOf returns the charts RenderAll renders for res, in order: NamesFor its mode, then the
// efficiency chart when it has energy answers.
func chartsOf(res *analysis.Result) []string {
	mode := record.ModeConcurrency
	if res != nil {
		mode = res.Mode
	}
	all := NamesFor(mode)
	switch {
	case whole(res) && mode.IsRate():
		all = slices.DeleteFunc(all, func(n string) bool { return n == "rate_ttft" }) // no TTFT
	case whole(res):
		all = slices.Clone(wholeNames)
	}
	if res != nil && res.Energy != nil {
		all = append(all, efficiencyName)
	}
	return all
}

// RenderCompare renders the overlay charts of compareNames() — CompareThroughput and
// CompareLatency of runs, labelled labels — at Width × Height in every format of Formats()
// and as narrow SVG (renderFormats), in that order, PNG, SVG and narrow SVG for each chart. It
// writes no file. An error building a chart is CompareThroughput's or CompareLatency's; one
// rendering it names the chart ("NAME: …").
func RenderCompare(runs []*analysis.Result, labels []string) ([]File, error) {
	return RenderCompareContext(context.Background(), runs, labels)
}

// RenderCompareContext is RenderCompare that an interrupt ends: once ctx is done it stops
// before the next chart (the one in progress finishes) and returns ctx's error and no files.
func RenderCompareContext(ctx context.Context, runs []*analysis.Result, labels []string) ([]File, error) {
	var files []File
	for i, build := range []func([]*analysis.Result, []string) (*Figure, error){CompareThroughput, CompareLatency} {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		name := compareNames()[i]
		c, err := build(runs, labels)
		if err != nil {
			return nil, err
		}
		rendered, err := renderFormats(name, c, Width, Height)
		if err != nil {
			return nil, err
		}
		files = append(files, rendered...)
	}
	return files, nil
}

// renderFormats renders c, the chart called name, at w × h in every format of Formats(),
// then — but for the dashboard, which report.html does not show — as SVG at its narrow size
// (narrowSize), a File marked Narrow: the one chart, built once, drawn at both sizes.
func renderFormats(name string, c Chart, w, h vg.Length) ([]File, error) {
	var files []File
	for _, format := range formats() {
		b, err := Render(c, w, h, format)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		files = append(files, File{Name: name, Format: format, Data: b})
	}
	if name == "dashboard" {
		return files, nil
	}
	nw, nh := narrowSize(name)
	b, err := Render(c, nw, nh, "svg")
	if err != nil {
		return nil, fmt.Errorf("%s, narrow: %w", name, err)
	}
	return append(files, File{Name: name, Format: "svg", Data: b, Narrow: true}), nil
}

// SVGs returns the SVG renderings among files keyed as report.HTML, CompareHTML and GridHTML
// take them: by chart name, a Narrow rendering by its name + narrowSuffix
// (report.NarrowSuffix).
func SVGs(files []File, narrowSuffix string) map[string][]byte {
	svgs := map[string][]byte{}
	for _, f := range files {
		switch {
		case f.Format != "svg":
		case f.Narrow:
			svgs[f.Name+narrowSuffix] = f.Data
		default:
			svgs[f.Name] = f.Data
		}
	}
	return svgs
}

// rateNames are the charts RenderAll renders for an arrival-rate run, in order.
var rateNames = []string{"rate_throughput", "rate_ttft", "rate_e2e", "rate_lag", "dashboard"}

// NamesFor returns the base names of the charts RenderAll renders for a run of mode m, in
// order: Names() for a closed-loop run, rate_throughput, rate_ttft, rate_e2e, rate_lag and
// dashboard for an arrival-rate one.
func NamesFor(m record.Mode) []string {
	if m.IsRate() {
		return append([]string(nil), rateNames...)
	}
	return names()
}
