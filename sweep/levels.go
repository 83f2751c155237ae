package sweep

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxLevels bounds the number of levels (or rates) a plan may have: 100 levels of the default
// 30 s window already run for most of an hour, and a list or a progression of more is a typo
// (a step of 1 to 1,000) rather than a plan.
const maxLevels = 100

// LevelsSpec is the sweep plan: an explicit list, or a geometric or linear progression.
type LevelsSpec struct {
	// List is an explicit list of concurrencies.
	List []int `yaml:"-"`
	// Start, Max, Factor and Step describe a progression: geometric when Factor > 1, linear
	// when Step > 0.
	Start  int     `yaml:"start"`
	Max    int     `yaml:"max"`
	Factor float64 `yaml:"factor"`
	Step   int     `yaml:"step"`
}

// UnmarshalYAML decodes a levels list ([1, 2, 4]) or a progression mapping ({start, max,
// factor} or {start, max, step}). A mapping replaces the whole spec.
func (l *LevelsSpec) UnmarshalYAML(n *yaml.Node) error {
	var out LevelsSpec
	fields := map[string]any{"start": &out.Start, "max": &out.Max, "factor": &out.Factor, "step": &out.Step}
	list, err := decodeSpec(n, "sweep.levels", "an integer concurrency",
		"want a list such as [1, 2, 4] or a mapping such as {start: 1, max: 256, factor: 2}",
		func(item *yaml.Node) (int, bool) {
			v, err := strconv.Atoi(item.Value)
			return v, item.Kind == yaml.ScalarNode && item.Tag == "!!int" && err == nil
		},
		func(key string, v *yaml.Node) (known, ok bool) {
			dst, known := fields[key]
			return known, known && v.Decode(dst) == nil
		})
	if err != nil {
		return err
	}
	out.List = list
	*l = out
	return nil
}

// MarshalYAML writes the list form when List is set, else the progression mapping.
func (l LevelsSpec) MarshalYAML() (any, error) {
	if len(l.List) > 0 {
		return flowList(l.List, "!!int", strconv.Itoa), nil
	}
	return progression[int]{Start: l.Start, Max: l.Max, Factor: l.Factor, Step: l.Step}, nil
}

// String formats the spec as it is written in YAML: "[1, 2, 4]", "1..256 ×2" or "8..64 +8".
func (l LevelsSpec) String() string {
	switch {
	case len(l.List) > 0:
		return listString(l.List, strconv.Itoa)
	case l.Step > 0:
		return fmt.Sprintf("%d..%d +%d", l.Start, l.Max, l.Step)
	default:
		return fmt.Sprintf("%d..%d ×%g", l.Start, l.Max, l.Factor)
	}
}

// Expand returns the concurrencies of the plan, strictly increasing.
//
// An explicit list is returned as written (each level must be ≥ 1 and larger than the one
// before). A geometric progression {start, max, factor} gives round(start·factor^k) for
// k = 0, 1, …, dropping values equal to the previous one (factors below 2 round to repeats at
// small concurrencies). A linear progression {start, max, step} gives start + k·step. Both stop
// at max, and max itself is appended when the progression does not land on it, so the sweep
// always reaches the configured ceiling: {start: 1, max: 100, factor: 2} gives
// 1, 2, 4, 8, 16, 32, 64, 100.
func (l LevelsSpec) Expand() ([]int, error) {
	if len(l.List) > 0 {
		if l.Start != 0 || l.Max != 0 || l.Factor != 0 || l.Step != 0 {
			return nil, errors.New("give a list or a progression, not both")
		}
		if len(l.List) > maxLevels {
			return nil, fmt.Errorf("%d levels: at most %d (a sweep of more runs for hours; choose fewer)", len(l.List), maxLevels)
		}
		for i, v := range l.List {
			if v < 1 {
				return nil, fmt.Errorf("level %d is %d: concurrency must be ≥ 1", i+1, v)
			}
			if i > 0 && v <= l.List[i-1] {
				return nil, fmt.Errorf("levels must increase: %d follows %d", v, l.List[i-1])
			}
		}
		return append([]int(nil), l.List...), nil
	}
	switch {
	case l.Start == 0 && l.Max == 0 && l.Factor == 0 && l.Step == 0:
		return nil, errors.New("no levels: give a list such as [1, 2, 4] or {start, max, factor}")
	case l.Start < 1:
		return nil, fmt.Errorf("start is %d: must be ≥ 1", l.Start)
	case l.Max < l.Start:
		return nil, fmt.Errorf("max %d is below start %d", l.Max, l.Start)
	case l.Factor != 0 && l.Step != 0:
		return nil, errors.New("give factor (geometric) or step (linear), not both")
	case l.Step < 0:
		return nil, fmt.Errorf("step is %d: must be > 0", l.Step)
	case l.Step == 0 && !(l.Factor > 1) || math.IsInf(l.Factor, 0):
		return nil, fmt.Errorf("factor is %g: must be > 1 (or give step for a linear progression)", l.Factor)
	}
	var out []int
	add := func(v int) error {
		if len(out) > 0 && v <= out[len(out)-1] {
			return nil
		}
		if len(out) == maxLevels {
			return fmt.Errorf("more than %d levels (a sweep of more runs for hours): raise factor or step, or lower max", maxLevels)
		}
		out = append(out, v)
		return nil
	}
	if l.Step > 0 {
		for v := l.Start; v <= l.Max; v += l.Step {
			if err := add(v); err != nil {
				return nil, err
			}
		}
	} else {
		for k := 0; ; k++ {
			f := float64(l.Start) * math.Pow(l.Factor, float64(k))
			if f > float64(l.Max)+0.5 {
				break
			}
			v := int(math.Round(f))
			if v > l.Max {
				break
			}
			if n := len(out); n > 0 && v <= out[n-1] {
				// A factor close to 1 repeats values for many k: jump to the first k that
				// rounds above the last level, so expansion costs O(levels), not O(max/ln factor).
				next := int(math.Ceil(math.Log((float64(out[n-1])+0.5)/float64(l.Start)) / math.Log(l.Factor)))
				if next > k+1 {
					k = next - 1
				}
				continue
			}
			if err := add(v); err != nil {
				return nil, err
			}
		}
	}
	if err := add(l.Max); err != nil {
		return nil, err
	}
	return out, nil
}

// MaxWorkers is the most workers one process runs at any of levels: the size its connection
// pool needs. A shard (index of count; count 0 = not sharded) runs its part of each level.
func MaxWorkers(levels []int, index, count int) int {
	most := 1
	for _, c := range levels {
		if count > 0 {
			_, c = Workers(c, index, count)
		}
		most = max(most, c)
	}
	return most
}

// RatesSpec is the plan of a rate sweep (sweep.rates): an explicit list of offered rates in
// requests/s, a geometric {start, max, factor} or linear {start, max, step} progression, or
// Auto, rates planned around a probe's maximum QPS (PlanRates).
type RatesSpec struct {
	// List is an explicit list of rates.
	List []float64
	// Start, Max, Factor and Step describe a progression: geometric when Factor > 1, linear
	// when Step > 0.
	Start, Max, Factor, Step float64
	// Auto plans the rates from a measured maximum QPS (PlanRates).
	Auto bool
}

// UnmarshalYAML decodes sweep.rates: a list of requests/s ([1, 2.5, 4]), a progression mapping
// ({start, max, factor} or {start, max, step}) or auto. A value replaces the whole spec.
func (s *RatesSpec) UnmarshalYAML(n *yaml.Node) error {
	const what, want = "sweep.rates", "want auto, a list such as [1, 2, 4] or a mapping such as {start: 1, max: 32, factor: 2}"
	if n.Kind == yaml.ScalarNode {
		if n.Value != "auto" {
			return specError(n.Line, what, "%q: %s", n.Value, want)
		}
		*s = RatesSpec{Auto: true}
		return nil
	}
	num := func(v *yaml.Node) (float64, bool) {
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
			return 0, false
		}
		f, err := strconv.ParseFloat(v.Value, 64)
		return f, err == nil
	}
	var out RatesSpec
	fields := map[string]*float64{"start": &out.Start, "max": &out.Max, "factor": &out.Factor, "step": &out.Step}
	list, err := decodeSpec(n, what, "a rate in requests/s", want, num, func(key string, v *yaml.Node) (known, ok bool) {
		dst, known := fields[key]
		if !known {
			return false, false
		}
		f, ok := num(v)
		if ok {
			*dst = f
		}
		return true, ok
	})
	if err != nil {
		return err
	}
	out.List = list
	*s = out
	return nil
}

// MarshalYAML writes auto, the list form, the progression mapping, or nothing for no rates.
func (s RatesSpec) MarshalYAML() (any, error) {
	switch {
	case s.Auto:
		return "auto", nil
	case len(s.List) > 0:
		return flowList(s.List, "!!float", formatRate), nil
	case s.IsZero():
		return nil, nil
	}
	return progression[float64]{Start: s.Start, Max: s.Max, Factor: s.Factor, Step: s.Step}, nil
}

// String formats the spec as it is written: "auto", "[1, 2.5, 4]", "1..32 ×2" or "2..20 +2".
func (s RatesSpec) String() string {
	g := formatRate
	switch {
	case s.Auto:
		return "auto"
	case len(s.List) > 0:
		return listString(s.List, g)
	case s.Step > 0:
		return fmt.Sprintf("%s..%s +%s", g(s.Start), g(s.Max), g(s.Step))
	default:
		return fmt.Sprintf("%s..%s ×%s", g(s.Start), g(s.Max), g(s.Factor))
	}
}

// IsZero reports whether no rates are given.
func (s RatesSpec) IsZero() bool {
	return len(s.List) == 0 && s.Start == 0 && s.Max == 0 && s.Factor == 0 && s.Step == 0 && !s.Auto
}

// formatRate writes a rate as the YAML and the messages do: 2.5, 1e-05.
func formatRate(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// Validate reports what makes s unusable; an Auto spec (alone) is valid.
func (s RatesSpec) Validate() error {
	if s.Auto {
		if len(s.List) > 0 || s.Start != 0 || s.Max != 0 || s.Factor != 0 || s.Step != 0 {
			return errors.New("give auto, a list or a progression, not several")
		}
		return nil
	}
	_, err := s.expand()
	return err
}

// Rates returns the offered rates of the plan, strictly increasing, by the rules of
// LevelsSpec.Expand (a progression stops at max and ends on it; no rounding: rates need not
// be whole). It is an error for Auto, which needs a measured maximum QPS (PlanRates).
func (s RatesSpec) Rates() ([]float64, error) {
	if s.Auto {
		if err := s.Validate(); err != nil {
			return nil, err
		}
		return nil, errors.New("rates auto are planned from a maximum QPS: see PlanRates")
	}
	return s.expand()
}

// positive reports whether v is a finite rate > 0.
func positive(v float64) bool { return v > 0 && !math.IsInf(v, 1) }

// Offered rates are within [MinRate, MaxRate] requests/s: below about 1e-8 requests/s an
// arrival gap overflows time.Duration, and the upper bound bounds what a level can owe when
// issuing stops with every slot taken — the arrivals due meanwhile, each recorded cancelled
// (dispatch.go flush), at most MaxRate × the wait for the stop.
const (
	MinRate = 1e-3
	MaxRate = 1e5
)

// rateProblem says what is wrong with offered rate v ("" when it is usable): not > 0 and
// finite, or outside [MinRate, MaxRate].
func rateProblem(v float64) string {
	switch {
	case !positive(v):
		return "must be > 0 requests/s"
	case v < MinRate || v > MaxRate:
		return fmt.Sprintf("must be within [%g, %g] requests/s", MinRate, MaxRate)
	}
	return ""
}

func (s RatesSpec) expand() ([]float64, error) {
	if len(s.List) > 0 {
		if s.Start != 0 || s.Max != 0 || s.Factor != 0 || s.Step != 0 {
			return nil, errors.New("give a list or a progression, not both")
		}
		if len(s.List) > maxLevels {
			return nil, fmt.Errorf("%d rates: at most %d (a sweep of more runs for hours; choose fewer)", len(s.List), maxLevels)
		}
		for i, v := range s.List {
			if why := rateProblem(v); why != "" {
				return nil, fmt.Errorf("rate %d is %g: %s", i+1, v, why)
			}
			if i > 0 && v <= s.List[i-1] {
				return nil, fmt.Errorf("rates must increase: %g follows %g", v, s.List[i-1])
			}
		}
		return append([]float64(nil), s.List...), nil
	}
	switch {
	case s.Start == 0 && s.Max == 0 && s.Factor == 0 && s.Step == 0:
		return nil, errors.New("no rates: give a list such as [1, 2, 4], {start, max, factor} or auto")
	case rateProblem(s.Start) != "":
		return nil, fmt.Errorf("start is %g: %s", s.Start, rateProblem(s.Start))
	case !positive(s.Max) || s.Max < s.Start:
		return nil, fmt.Errorf("max %g is below start %g", s.Max, s.Start)
	case s.Max > MaxRate:
		return nil, fmt.Errorf("max is %g: %s", s.Max, rateProblem(s.Max))
	case s.Factor != 0 && s.Step != 0:
		return nil, errors.New("give factor (geometric) or step (linear), not both")
	case s.Step < 0 || math.IsNaN(s.Step) || math.IsInf(s.Step, 0):
		return nil, fmt.Errorf("step is %g: must be > 0", s.Step)
	case s.Step == 0 && !(s.Factor > 1) || math.IsInf(s.Factor, 0):
		return nil, fmt.Errorf("factor is %g: must be > 1 (or give step for a linear progression)", s.Factor)
	}
	var out []float64
	const eps = 1e-9 // relative: a progression that lands on max within rounding ends there
	for k := 0; ; k++ {
		v := s.Start + float64(k)*s.Step
		if s.Step == 0 {
			v = s.Start * math.Pow(s.Factor, float64(k))
		}
		if v > s.Max*(1+eps) {
			break
		}
		if len(out) == maxLevels {
			return nil, fmt.Errorf("more than %d rates: raise factor or step, or lower max", maxLevels)
		}
		out = append(out, min(v, s.Max))
	}
	if last := out[len(out)-1]; last < s.Max*(1-eps) {
		out = append(out, s.Max)
	}
	return out, nil
}

// planRatesFactors are the multiples of the maximum QPS that PlanRates offers.
var planRatesFactors = []float64{0.1, 0.25, 0.5, 0.7, 0.85, 1.0, 1.15, 1.3}

// PlanRates returns the auto rates around a measured maximum QPS maxQPS (> 0): 0.1, 0.25,
// 0.5, 0.7, 0.85, 1.0, 1.15 and 1.3 × maxQPS, each rounded to 3 significant figures (nil for
// a maxQPS that is not a finite positive number).
func PlanRates(maxQPS float64) []float64 {
	if !positive(maxQPS) {
		return nil
	}
	out := make([]float64, 0, len(planRatesFactors))
	for _, f := range planRatesFactors {
		v := roundSig(f*maxQPS, 3)
		if n := len(out); n > 0 && v <= out[n-1] {
			continue
		}
		out = append(out, v)
	}
	return out
}

// roundSig rounds v > 0 to n significant figures.
func roundSig(v float64, n int) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', n, 64), 64)
	return r
}

// The YAML of a levels or rates spec (what, as "sweep.levels"): a list or a progression
// mapping.

// specError is the error of a spec at line: what, then the message.
func specError(line int, what, format string, args ...any) error {
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: %s: %s", line, what, fmt.Sprintf(format, args...))}}
}

// decodeSpec decodes n, the spec what: a sequence into the list it returns, each item read by
// item (one it cannot read is said not to be itemWant), or a progression mapping (the list
// nil), each field read by field, which reports whether key is one (start, max, factor, step)
// and v a number for it. Any other node is an error saying want. Every item or field that
// cannot be read is reported at once, with its line.
func decodeSpec[T any](n *yaml.Node, what, itemWant, want string, item func(*yaml.Node) (T, bool),
	field func(key string, v *yaml.Node) (known, ok bool)) ([]T, error) {
	var list []T
	var errs []string
	switch n.Kind {
	case yaml.SequenceNode:
		list = make([]T, 0, len(n.Content))
		for _, it := range n.Content {
			v, ok := item(it)
			if !ok {
				errs = append(errs, fmt.Sprintf("line %d: %s: %q is not %s", it.Line, what, it.Value, itemWant))
				continue
			}
			list = append(list, v)
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			switch known, ok := field(k.Value, v); {
			case !known:
				errs = append(errs, fmt.Sprintf("line %d: %s: field %s not found (want start, max, factor or step)", k.Line, what, k.Value))
			case !ok:
				errs = append(errs, fmt.Sprintf("line %d: %s.%s: %q is not a number", v.Line, what, k.Value, v.Value))
			}
		}
	default:
		return nil, specError(n.Line, what, "%s", want)
	}
	if len(errs) > 0 {
		return nil, &yaml.TypeError{Errors: errs}
	}
	return list, nil
}

// progression is the YAML mapping of a progression of levels (int) or rates (float64).
type progression[T int | float64] struct {
	Start  T       `yaml:"start"`
	Max    T       `yaml:"max"`
	Factor float64 `yaml:"factor,omitempty"`
	Step   T       `yaml:"step,omitempty"`
}

// flowList is list as a YAML flow sequence ([1, 2, 4]) of scalars tagged tag.
func flowList[T any](list []T, tag string, format func(T) string) *yaml.Node {
	n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
	for _, v := range list {
		n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: format(v)})
	}
	return n
}

// listString formats list as the YAML writes it: "[1, 2.5, 4]".
func listString[T any](list []T, format func(T) string) string {
	parts := make([]string, len(list))
	for i, v := range list {
		parts[i] = format(v)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
