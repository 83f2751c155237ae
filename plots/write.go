package plots

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"gonum.org/v1/plot/vg"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/rundir"
)

// Names returns the base names of the charts WriteAll writes, in order (DESIGN §5).
func Names() []string {
	return []string{"throughput", "ttft", "tpot", "latency_vs_throughput", "qps", "dashboard"}
}

// Build returns the chart called name (one of Names()) for res.
func Build(name string, res *analysis.Result) (Chart, error) {
	switch name {
	case "throughput":
		return Throughput(res)
	case "ttft":
		return TTFT(res)
	case "tpot":
		return TPOT(res)
	case "latency_vs_throughput":
		return LatencyVsThroughput(res)
	case "qps":
		return QPS(res)
	case "dashboard":
		return Dashboard(res)
	}
	return nil, fmt.Errorf("plots: unknown chart %q", name)
}

// size returns the file size of the chart called name.
func size(name string) (w, h vg.Length) {
	if name == "dashboard" {
		return DashboardWidth, DashboardHeight
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

// WriteAll writes every chart of Names() into dir as NAME.png and NAME.svg, each file atomically
// (temporary file, then rename), and returns the paths written, PNG before SVG for each chart.
func WriteAll(res *analysis.Result, dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("plots: write: %w", err)
	}
	var paths []string
	for _, name := range Names() {
		c, err := Build(name, res)
		if err != nil {
			return paths, err
		}
		w, h := size(name)
		for _, format := range []string{"png", "svg"} {
			b, err := Render(c, w, h, format)
			if err != nil {
				return paths, fmt.Errorf("plots: %s: %w", name, err)
			}
			path := filepath.Join(dir, name+"."+format)
			if err := rundir.WriteFileAtomic(path, b); err != nil {
				return paths, err
			}
			paths = append(paths, path)
		}
	}
	return paths, nil
}
