package report

import (
	"math"
	"slices"
	"strconv"

	"github.com/kneecap/kneecap/analysis"
)

// hasLengths reports whether some level has a prompt or output length counted (levels of a
// level-summary CSV without the token-length columns, or of vLLM bench results, have none:
// the reports then leave the columns out).
func hasLengths(res *analysis.Result) bool {
	for i := range res.Levels {
		if res.Levels[i].InputTokens.Mean.OK() || res.Levels[i].OutputTokens.Mean.OK() {
			return true
		}
	}
	return false
}

// withLengths adds the columns of the lengths the server counted, mean prompt and output
// tokens per request (ISL, OSL), before the last column (valid) of a level table whose rows
// are sortedLevels(res); t is returned as it is when no level has them. sep separates a mean
// more than analysis.MaxLengthOff from its request from the request ("247≠64" in the
// console, "247 ≠ 64" in the reports).
func withLengths(t table, res *analysis.Result, isl, osl, sep string) table {
	if !hasLengths(res) || len(t.Header) == 0 {
		return t
	}
	at := len(t.Header) - 1
	t.Header = slices.Insert(slices.Clone(t.Header), at, isl, osl)
	for i, l := range sortedLevels(res) {
		if i >= len(t.Rows) || len(t.Rows[i]) != at+1 {
			break
		}
		p, o := l.LengthsOff()
		t.Rows[i] = slices.Insert(slices.Clone(t.Rows[i]), at, lengthCell(l.InputTokens, p, sep), lengthCell(l.OutputTokens, o, sep))
	}
	return t
}

// lengthCell shows a mean length counted, rounded to a token, and the request after sep when
// off is set.
func lengthCell(t analysis.TokenLengths, off bool, sep string) string {
	c := ftokens(t.Mean)
	if off {
		c += sep + ftokens(t.Requested)
	}
	return c
}

// ftokens formats a mean length rounded to a whole token, or "—".
func ftokens(v analysis.Float) string {
	if !v.OK() {
		return dash
	}
	return strconv.FormatFloat(math.Round(float64(v)), 'f', 0, 64)
}

// lengthsNote says what the token-lengths table holds.
const lengthsNote = "Per level, over the successful requests sent inside the measurement window: the length requested (the prompt's target; max_tokens as sent) and the mean, p50 and p95 of what the server counted (the prompt tokens its usage reported, “—” when it reported none; N_out). With fixed_output every request asks for exactly max_tokens (with ignore_eos and min_tokens); otherwise max_tokens is a cap the model may stop short of. ≠ marks a mean more than 5% off the request (a warning names the level)."

// lengthsTable holds the token lengths requested and counted per level (levels[].input_tokens
// and output_tokens of analysis.json).
func lengthsTable(res *analysis.Result) table {
	t := table{Header: []string{keyHeader(res), "prompt requested (tokens)", "prompt mean", "prompt p50", "prompt p95",
		"output requested (tokens)", "output mean", "output p50", "output p95", "fixed output"}}
	for _, l := range sortedLevels(res) {
		p, o := l.LengthsOff()
		in, out := l.InputTokens, l.OutputTokens
		t.Rows = append(t.Rows, []string{levelKey(&l),
			analysis.FormatTokens(in.Requested), meanCell(in, p), analysis.FormatTokens(in.P50), analysis.FormatTokens(in.P95),
			analysis.FormatTokens(out.Requested), meanCell(out, o), analysis.FormatTokens(out.P50), analysis.FormatTokens(out.P95),
			fbool(l.FixedOutput)})
	}
	return t
}

// meanCell shows a mean length counted, with ≠ when it is off the request.
func meanCell(t analysis.TokenLengths, off bool) string {
	if off {
		return analysis.FormatTokens(t.Mean) + " ≠"
	}
	return analysis.FormatTokens(t.Mean)
}
