package analysis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// yardstick is what a run's analysis measures its levels by, chosen once per run from its
// API (DESIGN §4.17): the throughput the fits, the knee, the plateau and overload read, and
// the latency the blow-up watches. A token stream's are output tokens/s and TTFT; an
// embeddings run's, whose answers are whole (no first token, no output), input tokens/s
// and E2E latency. Every step reads them through the yardstick, never a level's fields.
type yardstick struct {
	// tps is a level's throughput.
	tps func(*Level) Float
	// latency is the latency a user waited that the blow-up watches (on an open loop from the
	// scheduled arrival where the level has it).
	latency func(*Level) Latency
	// latencyName names that latency in the messages: "TTFT", or "latency".
	latencyName string
	// whole is set for an embeddings run: its levels have no TTFT, TPOT, ITL or TTFA.
	whole bool
}

// yardstickOf returns the yardstick of a run of api.
func yardstickOf(api record.API) yardstick {
	if !api.Streams() {
		return yardstick{tps: func(l *Level) Float { return l.InputTPS }, latency: (*Level).UserE2E, latencyName: "latency", whole: true}
	}
	return yardstick{tps: func(l *Level) Float { return l.OutputTPS }, latency: (*Level).UserTTFT, latencyName: "TTFT"}
}

// say returns w in the words of the yardstick: an embeddings run has no TTFT or output, so
// the TTFT its warnings name (the blow-up, a latency still rising, the plateau's
// confirmation) is the latency it watched instead, and its output TPS its input TPS.
func (ys yardstick) say(w warning) warning {
	if ys.whole {
		w.text = wholeWords.Replace(w.text)
	}
	return w
}

// wholeWords rewrites a warning for an embeddings run: its throughput is input tokens/s and
// its watched latency E2E.
var wholeWords = strings.NewReplacer("TTFT", "latency", "output TPS", "input TPS", "output throughput", "input throughput")

// streamMetrics are the latencies only a token stream has: absent from an embeddings
// level, and no SLO of an embeddings run.
var streamMetrics = []string{"ttft", "tpot", "itl"}

// wholeAnswers makes lv an embeddings level (DESIGN §4.17): the window's tokens are the
// input tokens its answers embedded (record.TokensInWindow), so they are its input TPS and
// its output TPS is 0; inputs is the inputs of the requests that succeeded in the window;
// TTFT, TPOT, ITL and TTFA do not apply and are absent from analysis.json.
func wholeAnswers(lv *Level, win *record.WindowTotals, inputs int) {
	lv.InputTPS, lv.InputTPSCI95 = lv.OutputTPS, lv.OutputTPSCI95
	lv.OutputTPS, lv.OutputTPSCI95 = 0, 0
	if win != nil {
		lv.InputsPerS = Float(win.PerSecond(float64(inputs)))
	}
	lv.TTFT, lv.TPOT, lv.ITL, lv.TTFA = NoLatency(), NoLatency(), NoLatency(), NoLatency()
	lv.TTFTKernel, lv.TTFTClient = nil, nil
	lv.whole = true
}

// Whole reports an embeddings level, whose answers arrived whole: it has no TTFT, TPOT, ITL
// or TTFA (their keys are absent from analysis.json), and the reports leave them out.
func (l *Level) Whole() bool { return l.whole }

// MarshalJSON encodes l; an embeddings level (Whole) without the keys of the latencies it
// does not have.
func (l Level) MarshalJSON() ([]byte, error) {
	type plain Level // without this method
	return marshalWhole(plain(l), l.whole, "ttft_ms", "tpot_ms", "itl_ms", "ttfa_ms")
}

// marshalWhole encodes v, a value of a type without MarshalJSON; when whole (an embeddings
// level or model summary), without the top-level keys of what a whole answer does not have,
// the others in their order.
func marshalWhole(v any, whole bool, absent ...string) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil || !whole {
		return b, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // the object's {
		return nil, err
	}
	out := append(make([]byte, 0, len(b)), '{')
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var val json.RawMessage
		if err := dec.Decode(&val); err != nil {
			return nil, err
		}
		key, _ := k.(string)
		if slices.Contains(absent, key) {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		kb, _ := json.Marshal(key)
		out = append(append(append(out, kb...), ':'), val...)
	}
	return append(out, '}'), nil
}

// MarkWholeAnswers marks levels read back from an embeddings run's analysis.json (meta.api)
// as embeddings levels again (Whole), and their by_model summaries: their absent latencies
// decode as zeros.
func MarkWholeAnswers(levels []Level) {
	for i := range levels {
		lv := &levels[i]
		lv.TTFT, lv.TPOT, lv.ITL, lv.TTFA = NoLatency(), NoLatency(), NoLatency(), NoLatency()
		lv.whole = true
		for j := range lv.ByModel {
			m := &lv.ByModel[j]
			m.TTFTP50, m.TTFTP95, m.TPOTP50, m.TPOTP95 = NaN(), NaN(), NaN(), NaN()
			m.whole = true
		}
	}
}

// StreamObjectives returns the objectives of s on latencies only a token stream has (TTFT,
// TPOT, ITL): none applies to an embeddings run.
func (s SLO) StreamObjectives() []Objective {
	var out []Objective
	for _, o := range s.Objectives() {
		if slices.Contains(streamMetrics, o.Metric) {
			out = append(out, o)
		}
	}
	return out
}

// WithoutStream returns s without its StreamObjectives: the SLO of an embeddings run, whose
// defaults (TTFT and TPOT p95) do not apply.
func (s SLO) WithoutStream() SLO {
	for _, o := range s.StreamObjectives() {
		o.Max = 0
		_ = s.Set(o)
	}
	return s
}

// Whole reports an embeddings run (Meta.API): its levels are measured by input tokens/s and
// latency, and have no TTFT, TPOT or ITL.
func (r *Result) Whole() bool { return !r.Meta.API.Streams() }

// TPS returns l's throughput as r's analysis read it: output tokens/s, or an embeddings
// run's input tokens/s; TPSCI95 its 95% CI half-width.
func (r *Result) TPS(l *Level) Float { return yardstickOf(r.Meta.API).tps(l) }

// TPSCI95: see TPS.
func (r *Result) TPSCI95(l *Level) Float {
	if r.Whole() {
		return l.InputTPSCI95
	}
	return l.OutputTPSCI95
}

// SameYardstick returns an error when runs (labelled labels) are not all measured by one
// yardstick, naming the first run measured otherwise than the first run: an embeddings run's
// input tokens/s and latency and a token stream's output tokens/s and TTFT are not drawn on
// one axis or gated against each other.
func SameYardstick(runs []*Result, labels []string) error {
	if len(runs) == 0 || runs[0] == nil {
		return nil
	}
	first := runs[0].Whole()
	for i, r := range runs[1:] {
		if r == nil || r.Whole() == first || i+1 >= len(labels) {
			continue
		}
		return fmt.Errorf("runs measured by different yardsticks: %s is %s, %s %s; compare embeddings runs only with embeddings runs",
			labels[0], yardstickNoun(runs[0]), labels[i+1], yardstickNoun(r))
	}
	return nil
}

// yardstickNoun names r's kind of run and its yardstick: "an embeddings run (…)" or "a
// token-stream run (…)".
func yardstickNoun(r *Result) string {
	if r.Whole() {
		return fmt.Sprintf("an embeddings run (api %s: input tokens/s and latency)", record.APIEmbeddings)
	}
	api := r.Meta.API
	if api == "" {
		api = record.APIChat
	}
	return fmt.Sprintf("a token-stream run (api %s: output tokens/s and TTFT)", api)
}
