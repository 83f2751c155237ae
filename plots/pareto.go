package plots

import (
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/kneecap/kneecap/analysis"
)

// ParetoName is the base name of the Pareto chart of a scenario grid (DESIGN §5.1, §5.3).
const ParetoName = "pareto"

// ParetoPoint is one level of a run on the Pareto plane: the output tokens/s each user sees
// (1 ÷ TPOT p50) against the output tokens/s each GPU delivers (the level's output TPS ÷ the
// GPUs of a replica).
type ParetoPoint struct {
	Concurrency int
	// PerUser is 1000 ÷ TPOT p50 (ms): output tokens/s per user.
	PerUser float64
	// PerGPU is output TPS ÷ GPUs per replica: output tokens/s per GPU.
	PerGPU float64
	// Valid is the level's validity (only valid levels make the frontier).
	Valid bool
}

// paretoPoints returns the levels of res that have both a TPOT p50 and an output TPS as Pareto
// points, in concurrency order; gpus < 1 counts as 1 (plan.gpus_per_replica).
func paretoPoints(res *analysis.Result, gpus int) []ParetoPoint {
	if res == nil {
		return nil
	}
	g := float64(max(gpus, 1))
	var out []ParetoPoint
	for _, l := range sortedLevels(res) {
		if !l.TPOT.P50.OK() || !(l.TPOT.P50 > 0) || !l.OutputTPS.OK() {
			continue
		}
		out = append(out, ParetoPoint{Concurrency: l.Concurrency, PerUser: 1000 / float64(l.TPOT.P50),
			PerGPU: float64(l.OutputTPS) / g, Valid: l.Valid})
	}
	return out
}

// paretoFrontier returns the non-dominated valid points of pts: those that no other valid
// point matches or beats on both per-user and per-GPU throughput while beating it on one.
// They are returned by per-user throughput ascending (so per-GPU descending), the line drawn.
func paretoFrontier(pts []ParetoPoint) []ParetoPoint {
	var out []ParetoPoint
	for i, p := range pts {
		if !p.Valid {
			continue
		}
		dominated := false
		for j, q := range pts {
			if i != j && q.Valid && q.PerUser >= p.PerUser && q.PerGPU >= p.PerGPU && (q.PerUser > p.PerUser || q.PerGPU > p.PerGPU) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].PerUser < out[j].PerUser })
	return out
}

// kneeOnPlane returns the point of the knee (concurrency c) on the Pareto plane: between the
// valid levels around c, per-user and per-GPU throughput interpolated linearly in log2
// concurrency; ok is false when c lies outside the valid levels.
func kneeOnPlane(pts []ParetoPoint, c float64) (x, y float64, ok bool) {
	var v []ParetoPoint
	for _, p := range pts {
		if p.Valid {
			v = append(v, p)
		}
	}
	for i, p := range v {
		pc := float64(p.Concurrency)
		if c == pc {
			return p.PerUser, p.PerGPU, true
		}
		if i > 0 && c < pc {
			q := v[i-1]
			qc := float64(q.Concurrency)
			if c < qc {
				return 0, 0, false
			}
			t := math.Log2(c/qc) / math.Log2(pc/qc)
			return q.PerUser + t*(p.PerUser-q.PerUser), q.PerGPU + t*(p.PerGPU-q.PerGPU), true
		}
	}
	return 0, 0, false
}

// faint is c at a quarter of its opacity: the dominated points.
func faint(c color.Color) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: 0x50}
}

// pareto is the Pareto chart of a scenario grid (DESIGN §5.1): per scenario (runs[i], named
// labels[i]), its levels on the plane of output tokens/s per user (x) against output tokens/s
// per GPU (y), its Pareto frontier joined by a line (filled markers), its dominated levels as
// faint markers and its invalid levels hollow, its frontier's points labelled "N=c" (placed
// apart, labelPlacer), and its knee a large triangle at the knee's TPS per GPU and the speed
// per user interpolated at its concurrency (a knee outside the valid levels is named in the
// legend, not drawn). gpus is plan.gpus_per_replica (< 1 counts as 1).
func pareto(runs []*analysis.Result, labels []string, gpus int) (*Figure, error) {
	return plotOf(paretoChart(runs, labels, gpus))
}

func paretoChart(runs []*analysis.Result, labels []string, gpus int) (*builder, error) {
	if len(labels) != len(runs) {
		return nil, fmt.Errorf("plots: pareto: %d labels for %d scenarios", len(labels), len(runs))
	}
	ylabel := "output tokens/s per GPU"
	if gpus > 1 {
		ylabel = fmt.Sprintf("output tokens/s per GPU (%d GPUs a replica)", gpus)
	}
	b := newBuilder(compareTitleOr("Pareto: throughput per GPU vs speed per user", runs), "output tokens/s per user (1 ÷ TPOT p50)", ylabel)
	drawn, hadDominated, hadInvalid := false, false, false
	var knees []*plotter.Scatter
	for i, r := range runs {
		if r == nil {
			return nil, fmt.Errorf("plots: pareto: scenario %q is nil", labels[i])
		}
		pts := paretoPoints(r, gpus)
		drawn = drawn || len(pts) > 0
		d, inv, err := b.paretoScenario(labels[i], runColor(i), pts)
		if err != nil {
			return nil, err
		}
		hadDominated, hadInvalid = hadDominated || d, hadInvalid || inv
		if s, err := b.paretoKnee(labels[i], runColor(i), r.Knee, pts, gpus); err != nil {
			return nil, err
		} else if s != nil {
			knees = append(knees, s)
		}
	}
	for _, k := range knees {
		b.p.Add(k) // over every scenario's line
	}
	if !drawn {
		return b.noData("no data: no scenario has a level with TPOT and output throughput")
	}
	if hadDominated {
		s, _ := plotter.NewScatter(plotter.XYs{{}})
		s.Color, s.Shape, s.Radius = faint(colGray), draw.CircleGlyph{}, vg.Points(3)
		b.legend("dominated level (faint)", s)
	}
	return b.finishExcluded(hadInvalid)
}

// paretoKnee marks a scenario's knee k: at its TPS ÷ gpus (y) and the per-user throughput
// interpolated between the valid levels around it (x, kneeOnPlane), in the legend; a knee
// outside the valid levels cannot be placed: the legend says so (s nil).
func (b *builder) paretoKnee(name string, c color.Color, k *analysis.Knee, pts []ParetoPoint, gpus int) (*plotter.Scatter, error) {
	if k == nil || !k.Concurrency.OK() || !(k.Concurrency > 0) || !k.TPS.OK() {
		return nil, nil
	}
	n := fmtNum(float64(k.Concurrency))
	x, _, ok := kneeOnPlane(pts, float64(k.Concurrency))
	s, err := plotter.NewScatter(plotter.XYs{{X: x, Y: float64(k.TPS) / float64(max(gpus, 1))}})
	if err != nil {
		return nil, fmt.Errorf("plots: pareto: knee: %w", err)
	}
	s.Color, s.Shape, s.Radius = c, draw.PyramidGlyph{}, vg.Points(6)
	if !ok {
		hollow := *s
		hollow.Color = faint(c)
		b.legend(fmt.Sprintf("%s knee N≈%s: outside the valid levels (not drawn)", name, n), &hollow)
		return nil, nil
	}
	b.legend(fmt.Sprintf("%s knee N≈%s", name, n), s)
	y := s.XYs[0].Y
	b.track([]float64{x}, []float64{y})
	b.marks = append(b.marks, mark{x: x, y: y, r: s.Radius})
	return s, nil
}

// paretoScenario draws one scenario's frontier (line and filled markers, in the legend),
// dominated valid points (faint) and invalid points (hollow), and queues the "N=c" labels.
func (b *builder) paretoScenario(name string, c color.Color, pts []ParetoPoint) (dominated, invalid bool, err error) {
	front := paretoFrontier(pts)
	onFront := map[int]bool{}
	var fxy plotter.XYs
	for _, p := range front {
		onFront[p.Concurrency] = true
		fxy = append(fxy, plotter.XY{X: p.PerUser, Y: p.PerGPU})
	}
	var dom, inv plotter.XYs
	var lab plotter.XYLabels
	for _, p := range pts {
		xy := plotter.XY{X: p.PerUser, Y: p.PerGPU}
		switch {
		case !p.Valid:
			inv = append(inv, xy)
		case !onFront[p.Concurrency]:
			dom = append(dom, xy)
		}
		if onFront[p.Concurrency] { // only the frontier's: the others would crowd it
			lab.XYs = append(lab.XYs, xy)
			lab.Labels = append(lab.Labels, fmt.Sprintf("N=%d", p.Concurrency))
		}
	}
	if _, err := b.addSeries(name+" frontier", c, nil, draw.CircleGlyph{}, fxy, inv); err != nil {
		return false, false, err
	}
	if len(dom) > 0 {
		s, err := plotter.NewScatter(dom)
		if err != nil {
			return false, false, fmt.Errorf("plots: pareto: %s: %w", name, err)
		}
		s.Color, s.Shape, s.Radius = faint(c), draw.CircleGlyph{}, vg.Points(3)
		b.p.Add(s)
		b.track(xsOf(dom), ysOf(dom))
		b.marked(dom, s.Radius)
	}
	b.addLabels(lab, c)
	return len(dom) > 0, len(inv) > 0, nil
}

// compareTitleOr is compareTitle of runs with a nil run tolerated (checked by the caller).
func compareTitleOr(kind string, runs []*analysis.Result) string {
	for _, r := range runs {
		if r == nil {
			return kind
		}
	}
	if len(runs) == 0 {
		return kind
	}
	return compareTitle(kind, runs)
}

// RenderPareto renders the Pareto chart (Pareto) at Width × Height as PNG (at PNGDPI) and
// SVG, and as narrow SVG (renderFormats), named ParetoName. It writes no file.
func RenderPareto(runs []*analysis.Result, labels []string, gpus int) ([]File, error) {
	f, err := pareto(runs, labels, gpus)
	if err != nil {
		return nil, err
	}
	return renderFormats(ParetoName, f, Width, Height)
}
