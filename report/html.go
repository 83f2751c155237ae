package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"github.com/kneecap/kneecap/analysis"
)

// chartOrder is the order charts appear in report.html; names not listed follow, sorted.
var chartOrder = []string{"throughput", "ttft", "tpot", "latency_vs_throughput", "qps", "rate_throughput", "rate_ttft", "rate_e2e", "rate_lag",
	"efficiency", "compare_throughput", "compare_latency"}

// HTML writes report.html: the content of the Markdown report in one self-contained page with
// CSS only (no script, no external assets), opening with figure cards (DESIGN §5.2). svgs
// maps chart names (throughput, ttft, …) to SVG documents, which are inlined; "dashboard" is
// left out when the charts it tiles are present.
func HTML(w io.Writer, res *analysis.Result, svgs map[string][]byte) error {
	if res == nil {
		return fmt.Errorf("report: html: nil result")
	}
	charts, err := inlineCharts(svgs)
	if err != nil {
		return fmt.Errorf("report: html: %w", err)
	}
	title := "kneecap report"
	if res.Meta.Name != "" {
		title += ": " + res.Meta.Name
	}
	p := page{
		Title: title, Subtitle: subtitle(res.Meta), Source: res.Meta.Source, StopReason: res.Meta.StopReason,
		Provenance: provenance(res.Meta), Cards: cards(res), Answer: Answer(res),
		Warnings: numberedList("w", res.Warnings), Charts: charts, Sections: reportSections(res),
	}
	return writePage(w, "html", p)
}

// reportSections are report.html's sections after the charts, those with something to show.
func reportSections(res *analysis.Result) []section {
	lv := section{ID: "levels", Title: "Levels", Empty: "No levels were measured."}
	if len(res.Levels) > 0 {
		t := levelTable(res)
		lv.Table, lv.Note = &t, levelsNote(res)
	}
	ss := []section{lv}
	if hasLengths(res) {
		t := lengthsTable(res)
		ss = append(ss, section{ID: "lengths", Title: "Token lengths", Table: &t, Note: lengthsNote})
	}
	if l, why := turnsLevel(res); l != nil {
		t := turnsTable(l)
		ss = append(ss, section{ID: "turns", Title: "By turn", Table: &t, Note: turnsNote(l, why)})
	}
	if mixed(res) {
		t := modelsTable(res)
		ss = append(ss, section{ID: "models", Title: "By model", Table: &t, Note: modelsNote})
	}
	if res.Energy != nil {
		t := energyTable(res)
		ss = append(ss, section{ID: "energy", Title: "Energy", Table: &t, Note: energyNote(res)})
	}
	if fits := fitNotes(res); len(fits) > 0 {
		ss = append(ss, section{ID: "fits", Title: "Fitted models", Items: fits})
	}
	m := methodTable(res)
	ss = append(ss, section{ID: "method", Title: "Method", Table: &m})
	if len(res.Levels) > 0 {
		t := validityTable(res)
		ss = append(ss, section{ID: "validity", Title: "Validity checks", Table: &t, Note: validityNote(res)})
	}
	if hasServer(res) {
		t := serverTable(res)
		ss = append(ss, section{ID: "server", Title: "Server metrics", Table: &t, Note: serverNote})
	}
	if len(res.Warnings) > 0 {
		ss = append(ss, section{ID: "warnings", Title: "Warnings", Warnings: numberedList("w", res.Warnings)})
	}
	return ss
}

// NarrowSuffix ends the key, in the svgs map of HTML, CompareHTML and GridHTML, of a chart's
// narrow rendering (a plots.File marked Narrow; plots.SVGs keys them): "throughput" +
// NarrowSuffix is shown in place of "throughput" on a viewport up to pageCSS's breakpoint (a
// phone), where the default rendering's text would shrink below legibility. A narrow
// rendering without its chart is ignored.
const NarrowSuffix = ".narrow"

// chart is one inlined SVG chart, its name and its narrow rendering ("" when none).
type chart struct {
	Name        string
	SVG, Narrow template.HTML
}

// inlineCharts orders the charts by chartOrder, leaves out a dashboard whose charts are
// present, pairs each with its narrow rendering, and checks every SVG (inlineSVG).
func inlineCharts(svgs map[string][]byte) ([]chart, error) {
	var names []string
	seen := map[string]bool{}
	for _, n := range chartOrder {
		if _, ok := svgs[n]; ok {
			names = append(names, n)
			seen[n] = true
		}
	}
	var rest []string
	for n := range svgs {
		if !seen[n] && !strings.HasSuffix(n, NarrowSuffix) && !(n == "dashboard" && (seen["throughput"] || seen["rate_throughput"])) {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	names = append(names, rest...)
	var charts []chart
	for _, n := range names {
		c := chart{Name: n}
		var err error
		if c.SVG, err = inlineSVG(svgs[n]); err != nil {
			return nil, fmt.Errorf("chart %s: %w", n, err)
		}
		if b, ok := svgs[n+NarrowSuffix]; ok {
			if c.Narrow, err = inlineSVG(b); err != nil {
				return nil, fmt.Errorf("chart %s, narrow: %w", n, err)
			}
		}
		charts = append(charts, c)
	}
	return charts, nil
}

// numbered is a list item with its 1-based number and its element id (prefix and number).
type numbered struct {
	N    int
	ID   string
	Text string
}

func numberedList(prefix string, ss []string) []numbered {
	out := make([]numbered, len(ss))
	for i, s := range ss {
		out[i] = numbered{N: i + 1, ID: fmt.Sprintf("%s%d", prefix, i+1), Text: s}
	}
	return out
}

// inlineSVG strips the XML prolog and comments before the <svg> element of a document that
// this program generated (gonum/plot's SVG back end), and refuses anything that could execute
// or load something: the page must stay self-contained.
func inlineSVG(b []byte) (template.HTML, error) {
	i := bytes.Index(b, []byte("<svg"))
	if i < 0 {
		return "", fmt.Errorf("no <svg> element")
	}
	b = b[i:]
	low := bytes.ToLower(b)
	for _, bad := range []string{"<script", "<foreignobject", "javascript:", "href=\"http", "href='http", "<image", "onload="} {
		if bytes.Contains(low, []byte(bad)) {
			return "", fmt.Errorf("svg contains %q", bad)
		}
	}
	return template.HTML(b), nil //nolint:gosec // generated by gonum/plot and checked above
}
