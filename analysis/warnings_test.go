package analysis

import (
	"errors"
	"strings"
	"testing"
)

// Warnings de-duplicate by kind and subject, not by text.
func TestWarningsAddOnce(t *testing.T) {
	var ws warnings
	ws.addOnce(bootstrapFewLevels(4))
	ws.addOnce(bootstrapFewLevels(4))
	ws.addOnce(bootstrapFewLevels(5)) // same kind: still once
	ws.addOnce(fitFailed(MethodUSL, errors.New("x")))
	ws.addOnce(fitFailed(MethodBatch, errors.New("x"))) // same kind, another subject
	ws.add(bootstrapFewLevels(4))                       // add never de-duplicates
	got := ws.texts()
	want := []string{
		"bootstrap: 4 valid levels leave 1 residual degree(s) of freedom after a 3-parameter fit: no 95% interval; measure at least 5 levels",
		"usl: x", "batch: x",
		"bootstrap: 4 valid levels leave 1 residual degree(s) of freedom after a 3-parameter fit: no 95% interval; measure at least 5 levels",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%q\nwant\n%q", got, want)
	}
	var none warnings
	if none.texts() == nil {
		t.Error("texts of no warnings is nil, want empty")
	}
}

// Four valid levels with a hinge headline bootstrap twice (the USL peak and the hinge knee);
// the interval warning appears once.
func TestAnalyzeBootstrapWarningOnce(t *testing.T) {
	r := Analyze(groundTruth(8, []int{1, 4, 16, 64}, 0.02, 1), Meta{}, Options{Bootstrap: 50})
	n := 0
	for _, w := range r.Warnings {
		if strings.HasPrefix(w, "bootstrap: 4 valid levels") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d bootstrap warnings, want 1: %q", n, r.Warnings)
	}
}

// The warning that knee methods disagree names each estimate as the reports do.
func TestKneeDisagreeWording(t *testing.T) {
	got := kneeDisagree(MethodBatch, 64, 24.5, MethodUSL, RuleMarginalGain, 0.10).text
	want := "knee methods disagree: batch-model slot limit at concurrency 64 vs the headline knee at 24.5 (USL, 10% per doubling), more than a factor 2 apart"
	if got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
