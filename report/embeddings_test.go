package report

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/record"
)

// embeddingsResult analyzes three closed-loop embeddings levels of 10 ms answers of 100
// tokens (2 inputs) each.
func embeddingsResult(t *testing.T) *analysis.Result {
	t.Helper()
	const w0 = int64(1e18)
	var levels []record.Level
	for i, c := range []int{1, 2, 4} {
		run := record.LevelRun{Index: i, Concurrency: c, W0: w0, W1: w0 + int64(time.Second), Steady: true}
		var recs []record.Record
		for w := range c {
			for k := range 100 {
				recs = append(recs, record.Record{Level: i, Concurrency: c, Worker: w, Seq: k, Phase: record.PhaseMeasure,
					Sent: w0 + int64(k)*int64(10*time.Millisecond), E2E: 10 * time.Millisecond, PromptTokens: 100, Inputs: 2, Status: record.StatusOK})
			}
		}
		levels = append(levels, record.Level{Run: run, Records: recs})
	}
	opts := analysis.DefaultOptions()
	opts.API = record.APIEmbeddings
	opts.SLO = analysis.SLO{E2EP95: time.Second}
	res := analysis.Analyze(analysis.Summarize(levels, opts), analysis.Meta{Name: "embed"}, opts)
	return &res
}

// TestEmbeddingsReports: an embeddings run's console and markdown tables show input tokens/s,
// inputs/s and latency, and no TTFT or TPOT column; its answer names input throughput.
func TestEmbeddingsReports(t *testing.T) {
	res := embeddingsResult(t)
	if !res.Whole() || res.Meta.API != record.APIEmbeddings {
		t.Fatalf("meta.api %q", res.Meta.API)
	}
	var con, md bytes.Buffer
	if err := ConsoleWith(&con, res, ConsoleOptions{Wide: true}); err != nil {
		t.Fatal(err)
	}
	if err := Markdown(&md, res, nil); err != nil {
		t.Fatal(err)
	}
	table, _, _ := strings.Cut(con.String()[strings.Index(con.String(), "     N"):], "\n")
	for _, want := range []string{"in tok/s", "inputs/s", "lat p50", "lat p99", "QPS"} {
		if !strings.Contains(table, want) {
			t.Errorf("console table %q lacks %q", table, want)
		}
	}
	if strings.Contains(table, "TTFT") || strings.Contains(table, "TPOT") || strings.Contains(table, "OSL") {
		t.Errorf("console table %q has a stream's column", table)
	}
	// 4 workers × 100 answers of 100 tokens a second, less the answer at the window's end.
	if !strings.Contains(con.String(), "Maximum input throughput is 39600 tokens/s at concurrency 4") {
		t.Errorf("console answer:\n%s", con.String())
	}
	m := md.String()
	if !strings.Contains(m, "| concurrency | requests | errors | input TPS (tokens/s) |") || strings.Contains(m, "TTFT p50 (ms)") || strings.Contains(m, "| TTFT |") {
		t.Errorf("report.md:\n%s", m)
	}
}

// TestEmbeddingsModelsTable: an embeddings run's By model table has its yardstick's columns
// (latency p50 and p95, input TPS) and each model's values, and no TTFT, TPOT or output TPS.
func TestEmbeddingsModelsTable(t *testing.T) {
	res := &analysis.Result{Meta: analysis.Meta{Name: "embed", API: record.APIEmbeddings}}
	lv := analysis.Level{Concurrency: 8, Valid: true, Requests: 40}
	lv.ByModel = []analysis.ModelStats{{Model: "base", Requests: 40, Share: 1, E2EP50: 10, E2EP95: 12, InputTPS: 39600}}
	res.Levels = []analysis.Level{lv}
	tb := modelsTable(res)
	if got := strings.Join(tb.Header, "|"); strings.Contains(got, "TTFT") || strings.Contains(got, "TPOT") || !strings.Contains(got, "latency p95 (ms)|input TPS") {
		t.Errorf("header %q: want latency p50, p95 and input TPS, no stream column", got)
	}
	if len(tb.Rows) != 1 || len(tb.Rows[0]) != len(tb.Header) || !strings.Contains(strings.Join(tb.Rows[0], "|"), "|10.0|12.0|39600") {
		t.Errorf("rows %q", tb.Rows)
	}
}

// TestEmbeddingsEnergyUnit: an embeddings run's energy is per input token (its yardstick's
// tokens), and the level table's column and the Energy note say so.
func TestEmbeddingsEnergyUnit(t *testing.T) {
	res := &analysis.Result{Meta: analysis.Meta{Name: "embed", API: record.APIEmbeddings}}
	g := analysis.NoLevelGPU()
	g.JPerOutputToken = 0.01
	res.Levels = []analysis.Level{{Concurrency: 1, Valid: true, GPU: g}}
	tb := withEnergy(table{Header: []string{"N", "valid"}, Rows: [][]string{{"1", "yes"}}}, res)
	if !slices.Contains(tb.Header, "J per input token") {
		t.Errorf("level table header %q lacks J per input token", tb.Header)
	}
	if note := energyNote(res); !strings.HasPrefix(note, "J per input token = the GPUs' energy over a level's window ÷ its input tokens") {
		t.Errorf("energy note %q", note)
	}
}
