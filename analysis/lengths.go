package analysis

import (
	"encoding/json"
	"math"
	"strconv"

	"github.com/kneecap/kneecap/record"
)

// maxLengthOff is the largest relative difference between a level's mean prompt (or fixed
// output) length as the server counted it and the length requested that passes without a
// warning (DESIGN §4.14).
const maxLengthOff = 0.05

// summarizeLengths sets lv.InputTokens, lv.OutputTokens and lv.FixedOutput (DESIGN §4.14) from
// the successful requests of the level's latency population (inPop: sent in the window on a
// closed loop, arrived in it on an open one):
//   - requested: the mean of Record.RequestedPromptTokens (RequestedOutputTokens, max_tokens as
//     sent) over those that carry it; records from before those fields take the workload's
//     nominal lengths from req (0: unknown, null);
//   - mean, p50 and p95 (R type 7) of the lengths the server counted: the prompt lengths its
//     usage reported (promptCounted; null when it reported none: a record's PromptTokens is
//     then the workload's own count, which would only repeat the request), and N_out
//     (Record.OutputTokens: usage.completion_tokens, else the content chunks).
func summarizeLengths(lv *Level, records []record.Record, inPop func(*record.Record) bool, req RequestedLengths) {
	var in, out []float64
	var reqIn, reqOut requestedMean
	for i := range records {
		r := &records[i]
		if !r.OK() || !inPop(r) {
			continue
		}
		if promptCounted(r) {
			in = append(in, float64(r.PromptTokens))
		}
		out = append(out, float64(r.OutputTokens))
		reqIn.add(r.RequestedPromptTokens)
		reqOut.add(r.RequestedOutputTokens)
	}
	lv.InputTokens = tokenLengths(reqIn.mean(req.InputTokens), in)
	lv.OutputTokens = tokenLengths(reqOut.mean(req.OutputTokens), out)
	lv.FixedOutput = req.FixedOutput
}

// promptCounted reports whether r.PromptTokens is the server's count: its usage arrived
// (tokens_source usage, or a usage the client did not believe for the output) and its
// prompt_tokens was believed (no Record.UsagePromptTokens) and given (a usage without
// prompt_tokens leaves the workload's count).
func promptCounted(r *record.Record) bool {
	usage := r.TokensSource == record.TokensFromUsage || r.UsageOutputTokens != 0
	return usage && r.UsagePromptTokens == 0 && r.PromptTokens > 0
}

// requestedMean sums the requested lengths of the records that carry one.
type requestedMean struct {
	sum float64
	n   int
}

func (m *requestedMean) add(tokens int) {
	if tokens > 0 {
		m.sum += float64(tokens)
		m.n++
	}
}

// mean returns the mean requested length, else nominal when it is positive, else NaN.
func (m *requestedMean) mean(nominal float64) Float {
	switch {
	case m.n > 0:
		return Float(m.sum / float64(m.n))
	case nominal > 0 && finite(nominal):
		return Float(nominal)
	}
	return NaN()
}

// tokenLengths summarises the lengths counted (sorted in place) beside the mean requested.
func tokenLengths(requested Float, counted []float64) TokenLengths {
	t := NoTokenLengths()
	t.Requested = requested
	if len(counted) > 0 {
		l := LatencyOf(counted)
		t.Mean, t.P50, t.P95 = l.Mean, l.P50, l.P95
	}
	return t
}

// LengthOff returns the relative difference between the mean length counted and the length
// requested, (mean − requested) ÷ requested, or NaN when either is unknown.
func (t TokenLengths) LengthOff() Float {
	if !t.Requested.OK() || !(t.Requested > 0) || !t.Mean.OK() {
		return NaN()
	}
	return Float(float64(t.Mean-t.Requested) / float64(t.Requested))
}

// FormatTokens formats a token length as reports print it: whole numbers as integers (64,
// 247), others with one decimal below 100 (31.5) and none from 100 (123); "—" when v is not
// finite.
func FormatTokens(v Float) string {
	f := float64(v)
	switch {
	case !v.OK():
		return "—"
	case f == math.Trunc(f) && math.Abs(f) < 1e15:
		return strconv.FormatFloat(f, 'f', 0, 64)
	case math.Abs(f) >= 100:
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}

// lengthOff reports whether t's mean is more than maxLengthOff from its request.
func lengthOff(t TokenLengths) bool {
	d := t.LengthOff()
	return d.OK() && math.Abs(float64(d)) > maxLengthOff
}

// LengthsOff reports whether the server counted the level's prompts, or its outputs when they
// were of fixed length, more than maxLengthOff from the length requested (the level ran
// another workload than the one asked for, and a warning names it).
func (l *Level) LengthsOff() (prompt, output bool) {
	return lengthOff(l.InputTokens), l.FixedOutput && lengthOff(l.OutputTokens)
}

// lengths warns about the levels whose prompts, or fixed-length outputs, the server counted
// more than maxLengthOff from the length requested: one warning for the prompts and one for
// the outputs, each naming every such level. Outputs without fixed_output are capped by
// max_tokens, not asked to reach it, and are not compared.
func (a *analyzer) lengths() {
	var prompt, output []*Level
	for i := range a.res.Levels {
		lv := &a.res.Levels[i]
		p, o := lv.LengthsOff()
		if p {
			prompt = append(prompt, lv)
		}
		if o {
			output = append(output, lv)
		}
	}
	if len(prompt) > 0 {
		a.warn(promptLengthOff(prompt))
	}
	if len(output) > 0 {
		a.warn(outputLengthIgnored(output))
	}
}

// UnmarshalJSON decodes t with the keys it lacks null (an analysis.json from before the token
// lengths has none), not 0.
func (t *TokenLengths) UnmarshalJSON(b []byte) error {
	type plain TokenLengths
	p := plain(NoTokenLengths())
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*t = TokenLengths(p)
	return nil
}
