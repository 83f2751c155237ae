package sweep_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/server"
	"github.com/kneecap/kneecap/sim"
)

// TestPreflightModelMix: against a simulator serving its base model and the adapter
// sql-lora, a mix of both passes the preflight; a mix naming two models it does not serve is
// refused with both named and the served models listed.
func TestPreflightModelMix(t *testing.T) {
	url, _ := startSim(t, sim.Config{Profile: sim.ProfileFixed, Adapters: []sim.Adapter{{Name: "sql-lora", Slowdown: 2}}})
	c := newClient(t, url, 2)
	ctx := context.Background()
	if _, err := server.RunPreflight(ctx, c, sim.DefaultModel, server.PreflightTimeout, sim.DefaultModel, "sql-lora"); err != nil {
		t.Fatalf("served mix: %v", err)
	}
	_, err := server.RunPreflight(ctx, c, sim.DefaultModel, server.PreflightTimeout, "sql-lora", "chat-lora", "code-lora")
	var ns *server.ModelNotServedError
	if !errors.As(err, &ns) {
		t.Fatalf("unserved mix: %v, want a ModelNotServedError", err)
	}
	want := `does not serve models "chat-lora", "code-lora"; it serves: ` + sim.DefaultModel + ", sql-lora"
	if ns.Model != "chat-lora" || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q (model %q), want %q", err, ns.Model, want)
	}
}
