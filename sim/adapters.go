package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// LoRA adapters (DESIGN §6, adapters): vLLM serves a base model and, with --enable-lora,
// adapters beside it, each a model name of its own that /v1/models lists with the base as
// its parent. The simulator serves Config.Model and each Adapter. An adapter request joins the
// same batch as the base model's and costs Slowdown times as much of it: its prefill takes
// Slowdown times as long (its prompt tokens weigh Slowdown in the step's prefill time), and it
// holds its slot while emitting one token every Slowdown steps (a credit of 1 ÷ Slowdown a
// step, a token each whole credit), its first token included. In the same batch its TPOT is
// therefore Slowdown times the base model's, and alone its TTFT is Slowdown times the
// base's prefill plus Slowdown steps.

// Adapter is a LoRA adapter the simulator serves beside its base model.
type Adapter struct {
	// Name is the adapter's model name (the request's "model").
	Name string `yaml:"name" json:"name"`
	// Slowdown multiplies the cost of the adapter's requests (≥ 1; 0 means 1).
	Slowdown float64 `yaml:"slowdown,omitempty" json:"slowdown,omitempty"`
}

// served reports whether c serves model (the base model or an adapter) and the slowdown of
// its requests (1 for the base model).
func (c Config) served(model string) (float64, bool) {
	if model == c.Model {
		return 1, true
	}
	for _, a := range c.Adapters {
		if a.Name == model {
			return max(a.Slowdown, 1), true
		}
	}
	return 0, false
}

// prefixRoot is the parent hash of the first KV block of a request for model (prefix
// caching): hashRoot for the base model, a hash of the adapter's name under it for an adapter,
// so that no two models share a cached block (vLLM adds the LoRA to each block's hash).
func (c Config) prefixRoot(model string) uint64 {
	if model == "" || model == c.Model {
		return hashRoot
	}
	ids := make([]int, len(model))
	for i := range len(model) {
		ids[i] = int(model[i])
	}
	return blockHash(hashRoot, ids)
}

// models returns the names of the models c serves: the base model, then its adapters.
func (c Config) models() []string {
	out := []string{c.Model}
	for _, a := range c.Adapters {
		out = append(out, a.Name)
	}
	return out
}

// WithModels returns c serving each of names as well: a name that is neither the base model
// nor one of its adapters becomes an adapter of slowdown 1 (the built-in target of a sweep
// whose workload mixes models).
func (c Config) WithModels(names []string) Config {
	for _, n := range names {
		if _, ok := c.served(n); !ok && n != "" {
			c.Adapters = append(c.Adapters[:len(c.Adapters):len(c.Adapters)], Adapter{Name: n, Slowdown: 1})
		}
	}
	return c
}

// validateAdapters reports the problems of c.Adapters through bad (field, format, args).
func (c Config) validateAdapters(bad func(field, format string, args ...any)) {
	seen := map[string]bool{c.Model: true}
	for i, a := range c.Adapters {
		switch {
		case strings.TrimSpace(a.Name) != a.Name || a.Name == "" || strings.ContainsFunc(a.Name, unicode.IsControl):
			bad("adapters", "entry %d: name %q must be non-empty, without whitespace around it or control characters", i, a.Name)
		case seen[a.Name]:
			bad("adapters", "entry %d: %q is served already (the base model or an earlier adapter)", i, a.Name)
		}
		seen[a.Name] = true
		if a.Slowdown != 0 && (!(a.Slowdown >= 1) || math.IsInf(a.Slowdown, 0)) {
			bad("adapters", "entry %d (%s): slowdown %g must be a finite number ≥ 1 (0 = 1)", i, a.Name, a.Slowdown)
		}
	}
}

// adaptersString describes the adapters (" adapters=sql-lora×3,chat-lora"), or "".
func (c Config) adaptersString() string {
	if len(c.Adapters) == 0 {
		return ""
	}
	parts := make([]string, len(c.Adapters))
	for i, a := range c.Adapters {
		parts[i] = bannerName(a.Name)
		if a.Slowdown > 1 {
			parts[i] += "×" + strconv.FormatFloat(a.Slowdown, 'g', -1, 64)
		}
	}
	return " adapters=" + strings.Join(parts, ",")
}

// bannerName writes a model name for the banner: as is when it is a plain token, quoted
// when it holds a space, a comma, a character the banner uses (=, ×) or one Go would escape
// (a control character), so that no name blurs the line or moves the terminal's cursor.
func bannerName(s string) string {
	if s == "" || strconv.Quote(s) != `"`+s+`"` || strings.ContainsAny(s, " ,=×") {
		return strconv.Quote(s)
	}
	return s
}

// ParseAdapters parses the --adapters flag of `kneecap sim`: NAME[:SLOWDOWN] entries
// separated by commas ("sql-lora:3,chat-lora"). The flag's syntax leaves no room for a name
// with a space or comma (a configuration's adapters list, or workload.models, has it); the

// other rules on names are Validate's.
func ParseAdapters(s string) ([]Adapter, error) {
	var out []Adapter
	for _, part := range strings.Split(s, ",") {
		name, slow, hasSlow := strings.Cut(strings.TrimSpace(part), ":")
		if strings.ContainsFunc(name, unicode.IsSpace) {
			return nil, fmt.Errorf("%q: name %q has a space: --adapters names cannot hold spaces or commas", part, name)
		}
		a := Adapter{Name: name}
		if hasSlow {
			v, err := strconv.ParseFloat(slow, 64)
			if err != nil {
				return nil, fmt.Errorf("%q: slowdown %q is not a number", part, slow)
			}
			a.Slowdown = v
		}
		out = append(out, a)
	}
	return out, nil
}

// modelCard is one entry of GET /v1/models, as vLLM's ModelCard: an adapter's root is its
// path and its parent the base model.
type modelCard struct {
	ID          string  `json:"id"`
	Object      string  `json:"object"`
	Created     int64   `json:"created"`
	OwnedBy     string  `json:"owned_by"`
	Root        string  `json:"root"`
	Parent      *string `json:"parent"`
	MaxModelLen *int    `json:"max_model_len,omitempty"`
}

// modelCards lists the base model and its adapters for GET /v1/models.
func (s *Server) modelCards() []modelCard {
	card := modelCard{ID: s.cfg.Model, Object: "model", Created: s.created, OwnedBy: "kneecap", Root: s.cfg.Model}
	if s.cfg.MaxModelLen > 0 {
		l := s.cfg.MaxModelLen
		card.MaxModelLen = &l
	}
	cards := []modelCard{card}
	for _, a := range s.cfg.Adapters {
		base := s.cfg.Model
		cards = append(cards, modelCard{ID: a.Name, Object: "model", Created: s.created, OwnedBy: "kneecap",
			Root: "/adapters/" + a.Name, Parent: &base, MaxModelLen: card.MaxModelLen})
	}
	return cards
}
