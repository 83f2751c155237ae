package config

import (
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/analysis"
)

// The slo: section takes p50, p95 and p99 of TTFT, TPOT, ITL and E2E; as with the p95 keys,
// the defaults stay unless a key sets them to 0, and a negative one is named by its key.
func TestSLOKeys(t *testing.T) {
	c, err := Load(writeConfig(t, "target:\n  url: http://127.0.0.1:8000/v1\n  model: m\nslo:\n  ttft_p95: 0s\n  ttft_p99: 3s\n  itl_p50: 20ms\n  e2e_p95: 1m\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := analysis.SLO{TPOTP95: 50 * time.Millisecond, TTFTP99: 3 * time.Second, ITLP50: 20 * time.Millisecond, E2EP95: time.Minute}
	if got := c.AnalysisOptions().SLO; got != want {
		t.Errorf("slo %+v, want %+v", got, want)
	}
	_, err = Load(writeConfig(t, "target:\n  url: http://127.0.0.1:8000/v1\n  model: m\nslo:\n  tpot_p50: -1ms\n"))
	if err == nil || !strings.Contains(err.Error(), "slo.tpot_p50") {
		t.Errorf("negative tpot_p50: %v", err)
	}
}
