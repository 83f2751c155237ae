package analysis

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kneecap/kneecap/record"
)

// This file holds what the server says about itself beside the fit (DESIGN §3.7, §4.14): the
// per-level server metrics and the server's own limit on requests run at once, compared with
// the fitted slot limit and the knee. (The evidence quoted beside the knee is in knee.go.)

// maxLimitOff is the largest relative difference between the server's limit on requests run
// at once and the batch model's slot limit S, or the headline knee, that passes without a
// warning: |estimate − limit| ≤ maxLimitOff × limit.
const maxLimitOff = 0.25

// Thresholds of a running count capped by the server (observedLimit).
const (
	// minQueued is the mean waiting requests from which a level counts as queued.
	minQueued = 1.0
	// capFlat is the least ratio of the smallest to the largest peak running count of the
	// queued levels: flat at the cap.
	capFlat = 0.9
	// capHeld is the least ratio of a queued level's mean running to the cap: held there.
	capHeld = 0.75
)

// slotSettings are the ServerInfo settings that state a limit on requests run at once, in the
// order they are trusted: kneecap-sim and vLLM max_num_seqs, SGLang max_running_requests,
// llama.cpp total_slots, TGI max_concurrent_requests (its router's admission limit).
var slotSettings = []string{"max_num_seqs", "max_running_requests", "total_slots", "max_concurrent_requests"}

// ServerLimit is the server's own limit on the requests it runs at once (DESIGN §4.14):
// stated by its info endpoint, or seen in its metrics as a running count capped while
// requests waited.
type ServerLimit struct {
	// Slots is the limit the fit is compared with: Observed when the metrics show one (what
	// bound at steady state), else Stated.
	Slots Float `json:"slots"`
	// Setting names the info endpoint's setting that states a limit (max_num_seqs,
	// max_running_requests, total_slots, max_concurrent_requests), Stated its value and From
	// the endpoint ("GET /props"); empty and null when the server states none.
	Setting string `json:"setting,omitempty"`
	Stated  Float  `json:"stated"`
	From    string `json:"from,omitempty"`
	// Observed is the most requests the server's metrics showed running at the levels
	// CappedAt, where its running count stayed flat while the requests waiting grew; null
	// when the metrics show no such cap.
	Observed Float `json:"observed"`
	CappedAt []int `json:"capped_at,omitempty"`
	// MaxWaiting is the mean waiting requests at the largest of those levels.
	MaxWaiting Float `json:"max_waiting"`
}

// Describe says where the limit comes from: "total_slots 4, GET /props; its metrics: at most
// 4 running while the mean waiting grew to 12, at concurrency 8, 16".
func (l *ServerLimit) Describe() string {
	var parts []string
	if l.Setting != "" {
		s := l.Setting + " " + fconcurrency(float64(l.Stated))
		if l.From != "" {
			s += ", " + l.From
		}
		parts = append(parts, s)
	}
	if l.Observed.OK() {
		cs := make([]string, len(l.CappedAt))
		for i, c := range l.CappedAt {
			cs[i] = strconv.Itoa(c)
		}
		parts = append(parts, fmt.Sprintf("its metrics: at most %s running while the mean waiting grew to %s, at concurrency %s",
			fconcurrency(float64(l.Observed)), fconcurrency(float64(l.MaxWaiting)), strings.Join(cs, ", ")))
	}
	return strings.Join(parts, "; ")
}

// serverEvidence is the analysis' view of a level's server metrics: a quantity the server did
// not expose is null. nil without a scrape in the window.
func serverEvidence(st *record.ServerStats) *ServerEvidence {
	if st == nil || st.Samples == 0 {
		return nil
	}
	v := func(q record.MetricQuantity, x float64) Float {
		if st.Exposes(q) {
			return Float(x)
		}
		return NaN()
	}
	e := &ServerEvidence{
		MeanRunning: v(record.MetricRunning, st.MeanRunning),
		MaxRunning:  v(record.MetricRunning, st.MaxRunning),
		MeanWaiting: v(record.MetricWaiting, st.MeanWaiting),
		MaxWaiting:  v(record.MetricWaiting, st.MaxWaiting),
		MaxKVUsage:  v(record.MetricKVUsage, st.MaxKVUsage),
		Preemptions: v(record.MetricPreemptions, st.Preemptions),
	}
	if st.MaxRunning < st.MeanRunning {
		e.MaxRunning = NaN() // levels.json from before max_running
	}
	if st.MaxWaiting < st.MeanWaiting {
		e.MaxWaiting = NaN()
	}
	return e
}

// UnmarshalJSON decodes e with the keys it lacks null (max_running and max_waiting are not
// in an analysis.json from before them), not 0.
func (e *ServerEvidence) UnmarshalJSON(b []byte) error {
	type plain ServerEvidence
	p := plain{NaN(), NaN(), NaN(), NaN(), NaN(), NaN()}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*e = ServerEvidence(p)
	return nil
}

// serverLimitOf returns the server's limit on requests run at once from what it states
// (info, the first of slotSettings it reports as a positive number) and what its metrics
// show (observedLimit over levels, sorted by concurrency); nil when neither says.
func serverLimitOf(info *record.ServerInfo, levels []Level) *ServerLimit {
	lim := &ServerLimit{Slots: NaN(), Stated: NaN(), Observed: NaN(), MaxWaiting: NaN()}
	if info != nil {
		for _, k := range slotSettings {
			v, err := strconv.ParseFloat(info.Settings[k], 64)
			if err == nil && v > 0 && finite(v) {
				lim.Setting, lim.Stated, lim.From = k, Float(v), info.From
				break
			}
		}
	}
	observedLimit(lim, levels)
	switch {
	case lim.Observed.OK():
		lim.Slots = lim.Observed
	case lim.Stated.OK():
		lim.Slots = lim.Stated
	default:
		return nil
	}
	return lim
}

// observedLimit sets lim.Observed when the server's metrics show its running count capped:
// at two or more levels requests waited (mean waiting ≥ minQueued) while the running count
// stayed flat (every level's peak — max running, else mean — within capFlat of the largest,
// the cap), held near the cap (mean running ≥ capHeld × cap) and below the level's
// concurrency, and the waiting grew from the first of those levels to the last. Every level
// with server metrics counts, valid or not: the cap is the server's, whatever the level's
// throughput did.
func observedLimit(lim *ServerLimit, levels []Level) {
	var queued []*Level
	for i := range levels {
		s := levels[i].Server
		if s != nil && s.MeanRunning.OK() && s.MeanWaiting.OK() && float64(s.MeanWaiting) >= minQueued {
			queued = append(queued, &levels[i])
		}
	}
	if len(queued) < 2 {
		return
	}
	peak := func(s *ServerEvidence) float64 {
		if s.MaxRunning.OK() {
			return float64(s.MaxRunning)
		}
		return float64(s.MeanRunning)
	}
	slots, low := 0.0, math.Inf(1)
	for _, l := range queued {
		slots, low = math.Max(slots, peak(l.Server)), math.Min(low, peak(l.Server))
	}
	if !(slots > 0) || low < capFlat*slots {
		return
	}
	for _, l := range queued {
		if float64(l.Server.MeanRunning) < capHeld*slots || slots >= float64(l.Concurrency) {
			return
		}
	}
	first, last := queued[0].Server, queued[len(queued)-1].Server
	if !(last.MeanWaiting > first.MeanWaiting) {
		return
	}
	lim.Observed, lim.MaxWaiting = Float(slots), last.MeanWaiting
	for _, l := range queued {
		lim.CappedAt = append(lim.CappedAt, l.Concurrency)
	}
}

// checkServerLimit compares the server's limit on requests run at once (serverLimitOf) with
// the fit: the batch model's slot limit S and the headline knee. Each more than maxLimitOff
// from the limit is a warning naming both. An estimate below the limit counts only when it
// is a plateau the sweep measured: S at the largest valid level is where the fit ran out of
// levels. It sets the result's ServerLimit. This is the one place the fit meets the
// server's own word, whatever the headline knee's definition.
func (a *analyzer) checkServerLimit() {
	lim := serverLimitOf(a.res.Meta.Server, a.res.Levels)
	if lim == nil {
		return
	}
	a.res.ServerLimit = lim
	top := 0.0
	for _, p := range a.pts {
		top = math.Max(top, p.x)
	}
	type estimate struct {
		what string
		v    Float
	}
	var ests []estimate
	if b := a.res.Throughput.Batch; b != nil {
		ests = append(ests, estimate{MethodBatch.EstimateLabel() + " S", b.Limit})
	}
	if k := a.res.Knee; k != nil {
		ests = append(ests, estimate{"headline knee (" + k.Method.Label() + " fit)", k.Concurrency})
	}
	l := float64(lim.Slots)
	for _, e := range ests {
		v := float64(e.v)
		if !e.v.OK() || !(v > 0) || math.Abs(v-l) <= maxLimitOff*l {
			continue
		}
		if v < l && v >= top*(1-1e-9) {
			continue // no plateau measured: the sweep ended below the limit
		}
		a.warn(serverLimitDisagree(e.what, v, lim))
	}
}
