package workload

import (
	"fmt"
	"math"
	"strings"
	"unicode"

	"github.com/kneecap/kneecap/record"
)

// Model mixes (DESIGN §3.6, workload.models): one server often serves a base model and several
// LoRA adapters beside it, each a model name of its own. A mix names the models a sweep's
// requests ask for and their weights; each request's model is drawn by weight from a stream of
// its own, seeded by (seed, level, worker, seq) as the request's other draws are, so a resumed
// level draws the same models and a mix adds nothing to, and moves nothing in, the draws of a
// workload without one. A conversation (workload.sessions) draws once: every turn asks the
// same model.

// ModelWeight is one entry of workload.models: a model name the target serves (a base model
// or an adapter) and its weight, relative to the others' (normalised to shares summing to 1).
type ModelWeight struct {
	// Name is the model the requests name (the OpenAI "model" field).
	Name string `yaml:"name" json:"name"`
	// Weight is the entry's relative weight (> 0).
	Weight float64 `yaml:"weight" json:"weight"`
}

// modelSalt separates the model draws from every other draw of the workload.
const modelSalt = 0x6d6f64656c6d6978

// validateModels reports every problem of workload.models, each naming its entry's key
// (workload.models[i].name) so the configuration places it at its line.
func validateModels(ms []ModelWeight) []error {
	var errs []error
	seen := map[string]int{}
	for i, m := range ms {
		key := fmt.Sprintf("workload.models[%d]", i)
		name := strings.TrimSpace(m.Name)
		switch first, dup := seen[name]; {
		case name == "":
			errs = append(errs, fmt.Errorf("%s.name: is empty: each entry names a model the target serves", key))
		case name != m.Name:
			errs = append(errs, fmt.Errorf("%s.name: %q has whitespace before or after it", key, m.Name))
		case strings.ContainsFunc(name, unicode.IsControl):
			errs = append(errs, fmt.Errorf("%s.name: %q has a control character", key, m.Name))
		case dup:
			errs = append(errs, fmt.Errorf("%s.name: %q is also workload.models[%d]: give each model once, with its whole weight", key, m.Name, first))
		default:
			seen[name] = i
		}
		if !(m.Weight > 0) || math.IsInf(m.Weight, 0) {
			errs = append(errs, fmt.Errorf("%s.weight: is %g: must be > 0 (a finite relative weight)", key, m.Weight))
		}
	}
	return errs
}

// shares returns the mix's weights normalised to sum to 1, in the order of the entries; nil
// without a mix.
func shares(ms []ModelWeight) []float64 {
	total := 0.0
	for _, m := range ms {
		total += m.Weight
	}
	if len(ms) == 0 || !(total > 0) {
		return nil
	}
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = m.Weight / total
	}
	return out
}

// modelMix is workload.models ready to draw from, built once with the workload: the names,
// their cumulative shares and the workload's seed. The zero modelMix draws "" (no mix).
type modelMix struct {
	names []string
	cum   []float64
	seed  int64
}

// modelMix returns the mix of w, ready to draw from.
func (w WorkloadConfig) modelMix() modelMix {
	m := modelMix{names: ModelNames(w.Models), seed: w.Seed}
	sum := 0.0
	for _, s := range shares(w.Models) {
		sum += s
		m.cum = append(m.cum, sum)
	}
	return m
}

// pick returns the model of request (level, worker, seq) (a conversation's: seq is its
// index), "" without a mix: the entry whose cumulative share first exceeds a uniform draw u
// in [0, 1) of the request's own stream (requestHash under modelSalt).
func (m modelMix) pick(level, worker, seq int) string {
	switch len(m.names) {
	case 0:
		return ""
	case 1:
		return m.names[0]
	}
	u := float64(requestHash(m.seed^modelSalt, level, worker, seq)>>11) / (1 << 53)
	for i, c := range m.cum {
		if u < c {
			return m.names[i]
		}
	}
	return m.names[len(m.names)-1] // cum short of 1 by rounding
}

// ModelNames returns the names of the mix's entries, in order.
func ModelNames(ms []ModelWeight) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Name
	}
	return out
}

// with returns req asking for the model the mix draws for (level, worker, seq), unless req
// names one already (a future trace column that names each request's model).
func (m modelMix) with(req record.Request, level, worker, seq int) record.Request {
	if req.Model == "" {
		req.Model = m.pick(level, worker, seq)
	}
	return req
}
