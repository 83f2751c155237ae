package openai

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/workload"
)

// TestKeepReply: against the simulator (fixed mode, 3 reasoning tokens then answer tokens
// "tok " each, sim/stream.go), a request with KeepReply keeps exactly the streamed answer
// content — 7 × "tok " of a 10-token output, no reasoning — and one without keeps nothing.
// The history is sent before the prompt: the server counts every message's words plus its
// 5-token template (sim promptTokens).
func TestKeepReply(t *testing.T) {
	srv := startSim(t, func(c *sim.Config) { c.ReasoningTokens = 3; c.ChatTemplateTokens = 5 })
	cl := newClient(t, srv.URL, func(o *Options) { o.Model = sim.DefaultModel })
	hist := []record.Message{{Role: workload.RoleUser, Content: "one two three"}, {Role: workload.RoleAssistant, Content: "tok tok"}}
	req := record.Request{Prompt: "four five", PromptTokens: 12, MaxTokens: 10, IgnoreEOS: true, History: hist, KeepReply: true}
	var rec record.Record
	cl.Do(t.Context(), &req, &rec)
	if !rec.OK() || rec.OutputTokens != 10 {
		t.Fatalf("record %+v", rec)
	}
	if want := strings.Repeat("tok ", 7); req.Reply != want {
		t.Errorf("Reply %q, want %q", req.Reply, want)
	}
	if rec.PromptTokens != 5+3+2+2 {
		t.Errorf("usage.prompt_tokens %d: want 12 (template 5 + 7 words of three messages)", rec.PromptTokens)
	}
	plain := record.Request{Prompt: "four five", MaxTokens: 10, IgnoreEOS: true}
	cl.Do(t.Context(), &plain, &rec)
	if !rec.OK() || plain.Reply != "" {
		t.Errorf("without KeepReply: reply %q (status %s)", plain.Reply, rec.Status)
	}
}
