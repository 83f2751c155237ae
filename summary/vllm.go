package summary

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kneecap/kneecap/analysis"
)

// maxVLLMFile bounds one vLLM result file (detailed results with per-request lists included).
const maxVLLMFile = 256 << 20

// readVLLMBench reads a directory of vLLM `vllm bench serve` (benchmarks/benchmark_serving.py)
// result JSON files (--save-result), one per --max-concurrency, into levels sorted by
// concurrency. Keys used: max_concurrency; completed, failed (or the errors list),
// num_prompts; duration; request_throughput; output_throughput; total_input_tokens; and for
// ttft, tpot, itl and e2el the mean_<m>_ms, median_<m>_ms and p<P>_<m>_ms keys (p90, p95 and
// p99 when --metric-percentiles asked for them). Meta comes from model_id, backend and date.
// A file saved with --save-detailed also has per-request lists (ttfts, itls, output_lens,
// errors, e2els in newer versions): then TTFT, TPOT, ITL and E2E are recomputed from them with
// kneecap's definitions (type-7 percentiles, p90 and p95 included), and the level says so.
//
// Such levels are marked valid and steady, and each carries a note that vLLM measures over
// the whole run (no warmup or drain exclusion) with an open loop capped at max_concurrency.
// A file saved with vLLM's default --metric-percentiles (99) has no p90 or p95: those stay
// null, and the analysis checks a p95 SLO against p99 instead, with a warning (DESIGN §4.7).
//
// A *.json file that is not a vLLM result (not a JSON object, or one with none of
// max_concurrency, output_throughput, request_throughput and the ttft keys) is skipped, with
// a warning naming it among the returned warnings. A result file without max_concurrency
// (unlimited), two files with the same one, or a directory with no result file is an error
// naming the file.
func readVLLMBench(dir string) ([]analysis.Level, analysis.Meta, []string, error) {
	meta := analysis.Meta{Source: "vLLM bench serve: " + dir}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, meta, nil, fmt.Errorf("read vllm bench: %w", err)
	}
	var (
		levels   []analysis.Level
		warnings []string
	)
	byConc := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || !strings.EqualFold(filepath.Ext(e.Name()), ".json") || e.Name() == "analysis.json" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		lv, m, err := readVLLMFile(path)
		var stray *notVLLMError
		switch {
		case errors.As(err, &stray):
			warnings = append(warnings, stray.Error())
			continue
		case err != nil:
			return nil, meta, nil, err
		}
		if prev, dup := byConc[lv.Concurrency]; dup {
			return nil, meta, nil, fmt.Errorf("read vllm bench: %s: max_concurrency %d already in %s", path, lv.Concurrency, prev)
		}
		byConc[lv.Concurrency] = path
		if meta.Model == "" {
			meta.Model = m.Model
		}
		if meta.Name == "" {
			meta.Name = m.Name
		}
		if meta.Date == "" || (m.Date != "" && m.Date < meta.Date) {
			meta.Date = m.Date
		}
		levels = append(levels, lv)
	}
	if len(levels) == 0 {
		return nil, meta, nil, fmt.Errorf("read vllm bench: %s: no vLLM result JSON files (*.json with max_concurrency)%s", dir, skippedNote(warnings))
	}
	slices.SortFunc(levels, func(a, b analysis.Level) int { return a.Concurrency - b.Concurrency })
	return levels, meta, warnings, nil
}

// notVLLMError is a *.json file that is not a vLLM bench serve result: skipped with a warning.
type notVLLMError struct{ path, why string }

func (e *notVLLMError) Error() string {
	return fmt.Sprintf("vLLM bench: %s skipped: %s, not a vLLM bench serve result", e.path, e.why)
}

// vllmKeys are keys of which a vLLM bench serve result has at least one.
var vllmKeys = []string{"max_concurrency", "output_throughput", "request_throughput", "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms"}

// isVLLMResult reports whether raw has a key of a vLLM result.
func isVLLMResult(raw map[string]json.RawMessage) bool {
	return slices.ContainsFunc(vllmKeys, func(k string) bool { _, ok := raw[k]; return ok })
}

// skippedNote is ", skipped N files that are not vLLM results" (or "").
func skippedNote(warnings []string) string {
	if len(warnings) == 0 {
		return ""
	}
	return fmt.Sprintf(" (skipped %d *.json files that are not vLLM results)", len(warnings))
}

// readVLLMFile reads one vLLM result file.
func readVLLMFile(path string) (analysis.Level, analysis.Meta, error) {
	var meta analysis.Meta
	raw, nonFinite, err := decodeVLLMFile(path)
	if err != nil {
		return analysis.Level{}, meta, err
	}
	v := vllmFields(raw)
	c, ok := v.num("max_concurrency")
	if !ok {
		return analysis.Level{}, meta, fmt.Errorf("read vllm bench: %s: key \"max_concurrency\" missing or null (run vllm bench serve with --max-concurrency, one file per level)", path)
	}
	if c <= 0 || c != math.Trunc(c) || c > math.MaxInt32 {
		return analysis.Level{}, meta, fmt.Errorf("read vllm bench: %s: max_concurrency %v is not a positive integer", path, c)
	}
	tps, ok := v.num("output_throughput")
	if !ok || tps < 0 {
		return analysis.Level{}, meta, fmt.Errorf("read vllm bench: %s: key \"output_throughput\" missing or not a number ≥ 0", path)
	}
	lv := newLevel()
	lv.Concurrency = int(c)
	lv.OutputTPS = analysis.Float(tps)
	v.set(&lv.QPS, "request_throughput")
	v.set(&lv.WindowS, "duration")
	v.set(&lv.GoodputQPS, "request_goodput")
	if in, ok := v.num("total_input_tokens"); ok && lv.WindowS > 0 {
		lv.InputTPS = analysis.Float(in / float64(lv.WindowS))
	}
	v.requests(&lv)
	if ol, ok := raw["output_lens"]; ok {
		var lens []float64
		if json.Unmarshal(ol, &lens) == nil && len(lens) > 0 {
			var s float64
			for _, x := range lens {
				s += x
			}
			lv.MeanOutputTokens = analysis.Float(s / float64(len(lens)))
		}
	}
	for _, m := range []struct {
		key string
		lat *analysis.Latency
	}{{"ttft", &lv.TTFT}, {"tpot", &lv.TPOT}, {"itl", &lv.ITL}, {"e2el", &lv.E2E}} {
		v.set(&m.lat.Mean, "mean_"+m.key+"_ms")
		v.set(&m.lat.P50, "median_"+m.key+"_ms")
		v.set(&m.lat.P50, "p50_"+m.key+"_ms")
		v.set(&m.lat.P90, "p90_"+m.key+"_ms")
		v.set(&m.lat.P95, "p95_"+m.key+"_ms")
		v.set(&m.lat.P99, "p99_"+m.key+"_ms")
	}
	switch n, err := perRequest(raw, &lv); {
	case err != nil:
		lv.Notes = append(lv.Notes, "per-request lists ignored ("+err.Error()+"): latencies are vLLM's aggregates")
	case n > 0:
		lv.Notes = append(lv.Notes, fmt.Sprintf("TTFT, TPOT, ITL and E2E recomputed from the per-request lists of %d successful requests (type-7 percentiles; ITL pools vLLM's gaps between chunks, not split per token)", n))
	}
	if nonFinite > 0 {
		lv.Notes = append(lv.Notes, fmt.Sprintf("%d values of the file were NaN or Infinity (as Python's json writes them): read as missing", nonFinite))
	}
	lv.Notes = append(lv.Notes, "imported from vLLM bench serve: measured over the whole run (no warmup or drain exclusion), open loop capped at max_concurrency")
	meta.Model = v.str("model_id")
	meta.Name = v.str("backend")
	if d := v.str("date"); d != "" {
		if t, err := time.Parse("20060102-150405", d); err == nil {
			meta.Date = t.UTC().Format(time.RFC3339)
		} else {
			meta.Date = d
		}
	}
	return lv, meta, nil
}

// decodeVLLMFile reads path as one JSON object of a vLLM result: a notVLLMError when it is
// not a JSON object or has none of vllmKeys, another error when it cannot be read. Python's
// NaN and Infinity are read as null (missing), and nonFinite counts them.
func decodeVLLMFile(path string) (raw map[string]json.RawMessage, nonFinite int, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read vllm bench: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(&limitedReader{r: f, n: maxVLLMFile})
	if err != nil {
		return nil, 0, fmt.Errorf("read vllm bench: %s: %w", path, err)
	}
	b, nonFinite = pythonNumbers(b)
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&raw); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		if errors.As(err, &se) || errors.As(err, &te) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, 0, &notVLLMError{path, "not a JSON object (" + err.Error() + ")"}
		}
		return nil, 0, fmt.Errorf("read vllm bench: %s: %w", path, err)
	}
	if !isVLLMResult(raw) {
		return nil, 0, &notVLLMError{path, "it has none of the keys " + strings.Join(vllmKeys, ", ")}
	}
	return raw, nonFinite, nil
}

// vllmFields reads the fields of one decoded vLLM result.
type vllmFields map[string]json.RawMessage

// num returns the finite number at key, false when it is missing, null or not one.
func (v vllmFields) num(key string) (float64, bool) {
	b, ok := v[key]
	if !ok || string(b) == "null" {
		return math.NaN(), false
	}
	var x float64
	if err := json.Unmarshal(b, &x); err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return math.NaN(), false
	}
	return x, true
}

// str returns the string at key, "" when it is missing or not one.
func (v vllmFields) str(key string) string {
	var s string
	if b, ok := v[key]; ok {
		_ = json.Unmarshal(b, &s)
	}
	return s
}

// set stores the number at key in dst when there is one.
func (v vllmFields) set(dst *analysis.Float, key string) {
	if x, ok := v.num(key); ok {
		*dst = analysis.Float(x)
	}
}

// requests sets lv's requests, errors and error rate from "completed" and "failed" (older
// versions: one error string per request in "errors", "" for success; else num_prompts −
// completed).
func (v vllmFields) requests(lv *analysis.Level) {
	completed, _ := v.num("completed")
	failed, hasFailed := v.num("failed")
	if !hasFailed {
		var errs []string
		if b, ok := v["errors"]; ok && json.Unmarshal(b, &errs) == nil && len(errs) > 0 {
			failed, hasFailed = 0, true
			for _, e := range errs {
				if e != "" {
					failed++
				}
			}
		} else if np, ok := v.num("num_prompts"); ok && np >= completed && !math.IsNaN(completed) {
			failed, hasFailed = np-completed, true
		}
	}
	if math.IsNaN(completed) || completed < 0 {
		return
	}
	if !hasFailed || failed < 0 {
		failed = 0
	}
	lv.Requests = int(completed + failed)
	lv.Errors = int(failed)
	if lv.Requests > 0 {
		lv.ErrorRate = analysis.Float(failed / (completed + failed))
	}
}

// perRequest recomputes lv's TTFT, TPOT, ITL and E2E from the per-request lists that vLLM
// writes with --save-detailed: "ttfts" (seconds), "itls" (seconds between chunks, one list
// per request), "output_lens", "errors" and, in newer versions, "e2els" (seconds). A request
// counts when its error is empty and it had content (TTFT > 0). E2E is e2els[i], else
// TTFT + Σ itls[i] (the arrival of the last chunk, which is what vLLM's latency is); TPOT is
// (E2E − TTFT) ÷ (output_len − 1) for output_len > 1, as vLLM defines it; ITL pools every
// gap. It returns the number of requests used: 0 without the lists, and an error (lv left
// alone) when they are malformed or their lengths disagree.
func perRequest(raw map[string]json.RawMessage, lv *analysis.Level) (int, error) {
	if _, ok := raw["ttfts"]; !ok {
		return 0, nil
	}
	if _, ok := raw["itls"]; !ok {
		return 0, nil
	}
	var (
		ttfts, lens, e2els []float64
		itls               [][]float64
		errs               []string
	)
	for _, f := range []struct {
		key      string
		dst      any
		optional bool
	}{{"ttfts", &ttfts, false}, {"itls", &itls, false}, {"output_lens", &lens, false}, {"errors", &errs, true}, {"e2els", &e2els, true}} {
		b, ok := raw[f.key]
		if !ok || string(b) == "null" {
			if f.optional {
				continue
			}
			return 0, fmt.Errorf("%q missing", f.key)
		}
		if err := json.Unmarshal(b, f.dst); err != nil {
			return 0, fmt.Errorf("%q: %v", f.key, err)
		}
	}
	n := len(ttfts)
	if len(itls) != n || len(lens) != n || (errs != nil && len(errs) != n) || (e2els != nil && len(e2els) != n) {
		return 0, fmt.Errorf("list lengths differ: %d ttfts, %d itls, %d output_lens", n, len(itls), len(lens))
	}
	const ms = 1e3
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	var ttft, tpot, itl, e2e []float64
	for i := range n {
		if (errs != nil && errs[i] != "") || !(ttfts[i] > 0) || !finite(ttfts[i]) {
			continue
		}
		end := ttfts[i]
		for _, g := range itls[i] {
			if finite(g) && g >= 0 {
				itl = append(itl, g*ms)
				end += g
			}
		}
		if e2els != nil && finite(e2els[i]) && e2els[i] >= ttfts[i] {
			end = e2els[i]
		}
		ttft = append(ttft, ttfts[i]*ms)
		e2e = append(e2e, end*ms)
		if lens[i] > 1 {
			tpot = append(tpot, (end-ttfts[i])*ms/(lens[i]-1))
		}
	}
	if len(ttft) == 0 {
		return 0, nil
	}
	lv.TTFT = analysis.LatencyOf(ttft)
	lv.TPOT = analysis.LatencyOf(tpot)
	lv.ITL = analysis.LatencyOf(itl)
	lv.E2E = analysis.LatencyOf(e2e)
	return len(ttft), nil
}

// limitedReader fails reads past n bytes, bounding memory against huge or hostile files.
type limitedReader struct {
	r io.Reader
	n int64
}

func (l *limitedReader) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("file larger than %d bytes", int64(maxVLLMFile))
	}
	if int64(len(p)) > l.n {
		p = p[:l.n]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	return n, err
}
