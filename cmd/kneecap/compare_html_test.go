package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCompareWritesHTML: compare writes compare.html beside compare.md, one page with both
// overlay charts inlined, the side-by-side table, each run's cards and no script.
func TestCompareWritesHTML(t *testing.T) {
	t.Parallel()
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "h100"), filepath.Join(tmp, "a100")
	writeRun(t, a, compareRun("h100", 64, 5000, 45.2))
	writeRun(t, b, compareRun("a100", 16, 1800, 11.3))
	out := filepath.Join(tmp, "cmp")
	e, _, _ := compareEnv()
	if err := run(context.Background(), e, []string{"compare", a, b, "-o", out}); err != nil {
		t.Fatalf("compare: %v", err)
	}
	page, err := os.ReadFile(filepath.Join(out, "compare.html"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(page)
	for _, want := range []string{`<figure id="chart-compare_throughput"><div class="wide"><svg`, `<figure id="chart-compare_latency"><div class="wide"><svg`,
		`<div class="narrow"><svg width="288pt" height="396pt"`,
		"<td>45.2 (36.2–56.5, USL)</td>", `<section id="run1">`, `<section id="run2">`, `<div class="label">Knee</div><div class="value">N ≈ 11.3</div>`} {
		if !strings.Contains(doc, want) {
			t.Errorf("compare.html lacks %q", want)
		}
	}
	if strings.Contains(strings.ToLower(doc), "<script") {
		t.Error("compare.html has a script")
	}
}
