package report

import (
	"bytes"
	"fmt"
	"html/template"
	"io"
)

// page is one self-contained HTML page: report.html or compare.html. Cards and Answer open
// it; the table of contents lists Lead, the charts and Sections, in that order.
type page struct {
	Title, Subtitle, Source, StopReason, Provenance string
	Cards                                           []card
	Answer                                          []string
	// Warnings are the ones Answer points to (footnote marks); a section lists them.
	Warnings       []numbered
	Lead, Sections []section
	Charts         []chart
}

// section is an h2 section of a page; every part is optional and shown in field order.
type section struct {
	ID, Title, Sub string
	Text           []string
	Cards          []card
	Answer         []string
	Table          *table
	Note           string
	Items          []string
	Warnings       []numbered
	// Empty is shown when the section has nothing else.
	Empty string
	// Link, when set, is a relative link shown as LinkText under the title (a grid's
	// scenario: its own report).
	Link, LinkText string
}

// writePage executes the page template into w; op names the caller in errors.
func writePage(w io.Writer, op string, p page) error {
	var buf bytes.Buffer
	if err := pageTemplate.Execute(&buf, p); err != nil {
		return fmt.Errorf("report: %s: %w", op, err)
	}
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("report: %s: %w", op, err)
	}
	return nil
}

// pageCSS lays the page out without script: cards in a wrapping grid, charts in one column
// and two from 75rem, every table in its own horizontal scroll container so the page never
// scrolls sideways. A chart scales to its column (width 100%, height from its viewBox), never
// wider than the page. Up to 37.5rem (600 px, a phone) a chart that has a narrow rendering
// shows it instead, at most 28rem wide. The breakpoint is measured against the viewport with
// its scrollbar (15 px in desktop Chromium, none on a phone): headless Chromium draws the
// smallest chart text, the 8 pt point labels, at 9.53 px at 390 px (the 288-unit viewBox in
// a 343 px column, 1.19 px a unit; 9.9 px without a scrollbar) where the 504-unit default
// would draw them at 5.4 px, and at 601 px the default at 8.79 px (a 554 px column); at 36rem
// the default at 577 px drew them at 8.41 px, below minChartTextPx (report.TestBrowserLayout).
const pageCSS = `*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif;margin:1.5rem auto;max-width:90rem;padding:0 1rem;color:#222;line-height:1.45}
h1{font-size:1.6rem;margin:0 0 .3rem;overflow-wrap:anywhere}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
p,li{overflow-wrap:anywhere}.sub{color:#555;margin:.1rem 0}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(9.5rem,1fr));gap:.75rem;margin:1.2rem 0}
.card{border:1px solid #d0d7de;border-radius:6px;padding:.55rem .75rem;background:#fff}
.card .label{font-size:.78rem;color:#555;text-transform:uppercase;letter-spacing:.04em}
.card .value{font-size:1.55rem;font-weight:600;line-height:1.25;font-variant-numeric:tabular-nums}
.card .unit{font-size:.85rem;font-weight:400;color:#555}.card .detail{font-size:.8rem;color:#444;margin-top:.15rem}
.answer{font-size:1.02rem;background:#f6f8fa;border-left:4px solid #1f77b4;padding:.8rem 1rem;max-width:68rem}
nav.toc ol{display:flex;flex-wrap:wrap;gap:.2rem 1.2rem;list-style:none;padding:0;margin:.5rem 0}
.charts{display:grid;grid-template-columns:minmax(0,1fr);gap:1rem}@media (min-width:75rem){.charts{grid-template-columns:repeat(2,minmax(0,1fr))}}
figure{margin:0}figure svg{display:block;width:100%;max-width:100%;height:auto}figure .narrow{display:none}
@media (max-width:37.5rem){figure .wide{display:none}figure .narrow{display:block;max-width:28rem;margin:0 auto}}
.scroll{overflow-x:auto;max-width:100%;margin:.5rem 0}
table{border-collapse:collapse;font-size:.85rem}th,td{border:1px solid #ddd;padding:.25rem .5rem;text-align:right;vertical-align:top}
th{background:#f6f8fa}table:not(.text) td{white-space:nowrap}table.text td,table.text th{text-align:left}table.text td{min-width:8rem}
.note{color:#555;font-size:.85rem}ol.warnings li{margin:.3rem 0}code{font-size:.9em}`

var pageTemplate = template.Must(template.New("page").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Title}}</title>
<style>
` + pageCSS + `
</style>
</head>
<body>
<header>
<h1>{{.Title}}</h1>
{{with .Subtitle}}<p class="sub">{{.}}</p>{{end}}
{{with .Source}}<p class="sub">Source: <code>{{.}}</code>{{with $.StopReason}} · stopped: {{.}}{{end}}</p>{{end}}
{{with .Provenance}}<p class="sub">{{.}}</p>{{end}}
{{template "cards" .Cards}}
{{template "answer" .}}
</header>
<nav class="toc" aria-label="Contents"><ol>{{range .Lead}}<li><a href="#{{.ID}}">{{.Title}}</a></li>{{end}}{{if .Charts}}<li><a href="#charts">Charts</a></li>{{end}}{{range .Sections}}<li><a href="#{{.ID}}">{{.Title}}</a></li>{{end}}</ol></nav>
{{range .Lead}}{{template "section" .}}{{end}}
{{if .Charts}}<h2 id="charts">Charts</h2>
<div class="charts">{{range .Charts}}
<figure id="chart-{{.Name}}">{{if .Narrow}}<div class="wide">{{.SVG}}</div><div class="narrow">{{.Narrow}}</div>{{else}}{{.SVG}}{{end}}</figure>{{end}}
</div>{{end}}
{{range .Sections}}{{template "section" .}}{{end}}
</body>
</html>
{{define "cards"}}{{if .}}<div class="cards">{{range .}}
<div class="card"><div class="label">{{.Label}}</div><div class="value">{{.Value}}{{with .Unit}} <span class="unit">{{.}}</span>{{end}}</div><div class="detail">{{.Detail}}</div></div>{{end}}
</div>{{end}}{{end}}
{{define "answer"}}{{if .Answer}}<p class="answer">{{range .Answer}}{{.}} {{end}}{{if .Warnings}}{{len .Warnings}} warning(s):{{range .Warnings}} <sup><a href="#{{.ID}}">{{.N}}</a></sup>{{end}}.{{end}}</p>{{end}}{{end}}
{{define "section"}}<section id="{{.ID}}">
<h2>{{.Title}}</h2>
{{with .Sub}}<p class="sub">{{.}}</p>
{{end}}{{with .Link}}<p>Its own report: <a href="{{.}}">{{$.LinkText}}</a></p>
{{end}}{{range .Text}}<p>{{.}}</p>
{{end}}{{template "cards" .Cards}}{{template "answer" .}}{{with .Table}}{{template "table" .}}
{{end}}{{with .Note}}<p class="note">{{.}}</p>
{{end}}{{with .Items}}<ul>{{range .}}<li>{{.}}</li>{{end}}</ul>
{{end}}{{with .Warnings}}<ol class="warnings">{{range .}}<li id="{{.ID}}">{{.Text}}</li>{{end}}</ol>
{{end}}{{if not (or .Text .Cards .Answer .Table .Items .Warnings)}}{{with .Empty}}<p>{{.}}</p>
{{end}}{{end}}</section>
{{end}}
{{define "table"}}<div class="scroll" tabindex="0"><table{{with .Class}} class="{{.}}"{{end}}>
<thead><tr>{{range .Header}}<th>{{.}}</th>{{end}}</tr></thead>
<tbody>{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table></div>{{end}}
`))
