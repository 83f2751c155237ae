package launch

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/workload"
)

// TestModelMixNamesServed: a workload.models name with inner spaces and a comma is a valid
// model name: the built-in simulator serves it as an adapter, and the preflight finds it; the
// simulator banner and the preflight line quote it.
func TestModelMixNamesServed(t *testing.T) {
	cfg := config.Default()
	cfg.Workload.Models = []workload.ModelWeight{{Name: "base", Weight: 1}, {Name: "team a, lora v2", Weight: 1}}
	var stderr bytes.Buffer
	s := &Sweep{Env: Env{Log: &stderr, Getenv: func(string) string { return "" }}, Cfg: cfg, Levels: []int{1}}
	tg, err := s.startTarget()
	if err != nil {
		t.Fatalf("start the simulator: %v", err)
	}
	defer tg.Close()
	if _, err := s.preflight(context.Background(), tg); err != nil {
		t.Fatalf("preflight: %v\n%s", err, stderr.String())
	}
	// The console quotes the names, so that the comma inside one reads as part of it.
	for _, want := range []string{
		`adapters=base,"team a, lora v2" at`,
		`preflight ok: models "base", "team a, lora v2" (the probe asked "` + sim.DefaultModel + `")`,
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %s:\n%s", want, stderr.String())
		}
	}
}
