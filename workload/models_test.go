package workload

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// mix3 is the acceptance mix of issue 25: weights 0.5, 0.3 and 0.2, given unnormalised.
var mix3 = []ModelWeight{{Name: "base", Weight: 5}, {Name: "sql-lora", Weight: 3}, {Name: "chat-lora", Weight: 2}}

// checkShares fails t unless each model's share of counts (n draws) is within 4 binomial
// standard deviations, √(p(1 − p) ÷ n), of its normalised weight.
func checkShares(t *testing.T, counts map[string]int, n int) {
	t.Helper()
	for i, p := range shares(mix3) {
		got := float64(counts[mix3[i].Name]) / float64(n)
		if sd := math.Sqrt(p * (1 - p) / float64(n)); math.Abs(got-p) > 4*sd {
			t.Errorf("model %s: share %.4f of %d, want %.2f ± %.4f (4 sd)", mix3[i].Name, got, n, p, 4*sd)
		}
	}
	if len(counts) != len(mix3) {
		t.Errorf("models drawn %v: want only %v", counts, ModelNames(mix3))
	}
}

// TestModelSharesAndDeterminism: a synthetic workload's models follow the mix's
// normalised weights over 20,000 requests (4 sd of a share of 0.5 is 1.4 points), the same
// (level, worker, seq) always draws the same model, and the mix changes nothing else of the
// request: its prompt and lengths are those of the workload without a mix.
func TestModelSharesAndDeterminism(t *testing.T) {
	cfg := WorkloadConfig{InputTokens: Dist{Dist: DistUniform, Min: 5, Max: 50}, OutputTokens: Dist{Dist: DistFixed, Mean: 8}, FixedOutput: true, Seed: 11}
	plain := synth(t, cfg)
	cfg.Models = mix3
	mixed := synth(t, cfg)
	counts := map[string]int{}
	const n = 20000
	for seq := range n {
		level, worker := seq%5, seq%13
		r := mixed.Next(level, worker, seq)
		counts[r.Model]++
		if again := mixed.Next(level, worker, seq); again.Model != r.Model {
			t.Fatalf("request (%d, %d, %d): model %s then %s", level, worker, seq, r.Model, again.Model)
		}
		p := plain.Next(level, worker, seq)
		if p.Model != "" || p.Prompt != r.Prompt || p.PromptTokens != r.PromptTokens || p.MaxTokens != r.MaxTokens {
			t.Fatalf("request %d: the mix changed the request beyond its model: %+v vs %+v", seq, p, r)
		}
	}
	checkShares(t, counts, n)
	if got := (WorkloadConfig{Models: mix3[:1], Seed: 1}.modelMix().pick(2, 3, 4)); got != "base" {
		t.Errorf("a mix of one: %q, want base", got)
	}
}

// TestSessionsKeepOneModel: every turn of a conversation asks the model drawn for the
// conversation, and the conversations' models follow the mix (4,000 conversations: 4 sd of
// a share of 0.5 is 3.2 points).
func TestSessionsKeepOneModel(t *testing.T) {
	cfg := sessionsConfig()
	cfg.Models = mix3
	w, err := NewWorkload(cfg, record.APIChat)
	if err != nil {
		t.Fatal(err)
	}
	s := w.(*Sessions)
	counts := map[string]int{}
	const convs = 4000
	for c := range convs {
		turns := s.Conversation(1, c%3, c)
		for _, tr := range turns[1:] {
			if tr.Model != turns[0].Model {
				t.Fatalf("conversation %d: turn asks %s after %s", c, tr.Model, turns[0].Model)
			}
		}
		if first := s.Next(1, c%3, c); first.Model != turns[0].Model {
			t.Fatalf("conversation %d: Next asks %s, its turns %s", c, first.Model, turns[0].Model)
		}
		counts[turns[0].Model]++
	}
	checkShares(t, counts, convs)
}

// TestTraceDrawsModels: a trace replay's arrivals draw their models from the mix (BurstGPT's
// Model column names the model the log came from, not one the target serves: it is not read).
func TestTraceDrawsModels(t *testing.T) {
	var b strings.Builder
	b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	for i := range 50 {
		b.WriteString(strconv.Itoa(i) + ",GPT-4,10,5,15,API log\n")
	}
	tf, err := ParseTrace(strings.NewReader(b.String()), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := NewTrace(tf, TraceConfig{File: "t"})
	if err != nil {
		t.Fatal(err)
	}
	tw, err := NewTraceWorkload(WorkloadConfig{Seed: 3, FixedOutput: true, Models: mix3}, record.APIChat, tr)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	const n = 4000
	mix := WorkloadConfig{Models: mix3, Seed: 3}.modelMix()
	for seq := range n {
		r := tw.Next(0, 0, seq)
		if r.Model != mix.pick(0, 0, seq) {
			t.Fatalf("arrival %d: model %q, want the mix's draw", seq, r.Model)
		}
		counts[r.Model]++
	}
	checkShares(t, counts, n)
}

// TestModelDrawsPinned: the model draws are those of the first release of workload.models
// (the same seed draws the same models across versions: a resumed sweep and a rerun compare
// like with like), and a draw allocates nothing (the cumulative shares are computed once,
// with the workload). The values are the draws of seed 11, level 1, worker 2, seq 0–11 as
// the mix's first implementation made them.
func TestModelDrawsPinned(t *testing.T) {
	mix := WorkloadConfig{Models: mix3, Seed: 11}.modelMix()
	want := strings.Fields("sql-lora chat-lora base base base sql-lora chat-lora chat-lora sql-lora base sql-lora sql-lora")
	for seq, w := range want {
		if got := mix.pick(1, 2, seq); got != w {
			t.Errorf("seq %d: model %s, want %s", seq, got, w)
		}
	}
	if a := testing.AllocsPerRun(100, func() { mix.pick(1, 2, 3) }); a != 0 {
		t.Errorf("a draw allocates %v times, want 0", a)
	}
}
