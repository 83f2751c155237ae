package analysis

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
)

// embedRecords are n embeddings requests of a closed loop of conc workers, each answering
// in lat with inputs inputs of tokens tokens in all, back to back from w0.
func embedRecords(conc, n int, lat time.Duration, inputs, tokens int, w0 int64) []record.Record {
	var out []record.Record
	for w := range conc {
		for i := range n {
			out = append(out, record.Record{Concurrency: conc, Worker: w, Seq: i, Phase: record.PhaseMeasure,
				Sent: w0 + int64(i)*int64(lat), E2E: lat, End: lat, PromptTokens: tokens, Inputs: inputs, Status: record.StatusOK})
		}
	}
	return out
}

// TestEmbeddingsLevel summarizes an embeddings level: input tokens/s and inputs/s from the
// answers completed in the window, no output, and no TTFT, TPOT, ITL or TTFA keys in its
// JSON; a chat level keeps them.
func TestEmbeddingsLevel(t *testing.T) {
	const w0 = int64(1e18)
	lat := 10 * time.Millisecond
	recs := embedRecords(4, 200, lat, 2, 100, w0)
	run := record.LevelRun{Index: 0, Concurrency: 4, W0: w0, W1: w0 + int64(time.Second), Steady: true}
	opts := DefaultOptions()
	opts.API = record.APIEmbeddings
	lv := Summarize([]record.Level{{Run: run, Records: recs}}, opts)[0]
	// 4 workers × 100 answers a second, each 100 tokens of 2 inputs.
	if got := float64(lv.InputTPS); got < 39000 || got > 40000 {
		t.Errorf("input TPS %g, want 40,000 (less the window's last answer)", got)
	}
	if got := float64(lv.InputsPerS); got < 780 || got > 800 || lv.OutputTPS != 0 {
		t.Errorf("inputs/s %g output TPS %g, want 800 and 0", got, lv.OutputTPS)
	}
	if !lv.Whole() || float64(lv.E2E.P50) != 10 {
		t.Errorf("whole %v e2e p50 %v", lv.Whole(), lv.E2E.P50)
	}
	b, err := json.Marshal(lv)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"ttft_ms"`, `"tpot_ms"`, `"itl_ms"`, `"ttfa_ms"`} {
		if strings.Contains(string(b), k) {
			t.Errorf("embeddings level has %s: %s", k, b)
		}
	}
	for _, k := range []string{`"e2e_ms"`, `"inputs_per_s"`, `"input_tps"`, `"concurrency":4`} {
		if !strings.Contains(string(b), k) {
			t.Errorf("embeddings level lacks %s: %s", k, b)
		}
	}
	chat := Summarize([]record.Level{{Run: run, Records: recs}}, DefaultOptions())[0]
	cb, _ := json.Marshal(chat)
	if !strings.Contains(string(cb), `"ttft_ms"`) || strings.Contains(string(cb), `"inputs_per_s"`) {
		t.Errorf("chat level: %s", cb)
	}
}

// TestStreamObjectives leaves out the TTFT, TPOT and ITL objectives of an embeddings run.
func TestStreamObjectives(t *testing.T) {
	s := SLO{TTFTP95: time.Second, TPOTP95: time.Millisecond, ITLP50: time.Millisecond, E2EP95: time.Second}
	if n := len(s.StreamObjectives()); n != 3 {
		t.Errorf("%d stream objectives, want 3", n)
	}
	if w := s.WithoutStream(); len(w.Objectives()) != 1 || w.E2EP95 != time.Second {
		t.Errorf("without stream: %+v", w)
	}
}

// TestComparableYardsticks: an embeddings run beside a chat run is refused, naming both and
// what each is measured by; two embeddings runs, or chat beside responses, compare.
func TestComparableYardsticks(t *testing.T) {
	run := func(api record.API) *Result { return &Result{Meta: Meta{API: api}} }
	err := Comparable([]*Result{run(""), run(record.APIEmbeddings)}, []string{"chat", "emb"})
	want := "runs measured by different yardsticks: chat is a token-stream run (api chat: output tokens/s and TTFT), " +
		"emb an embeddings run (api embeddings: input tokens/s and latency); compare embeddings runs only with embeddings runs"
	if err == nil || err.Error() != want {
		t.Errorf("chat beside embeddings: %v\nwant %s", err, want)
	}
	for _, pair := range [][2]record.API{{record.APIEmbeddings, record.APIEmbeddings}, {record.APIChat, record.APIResponses}} {
		if err := Comparable([]*Result{run(pair[0]), run(pair[1])}, []string{"a", "b"}); err != nil {
			t.Errorf("%s beside %s: %v", pair[0], pair[1], err)
		}
	}
}
