package sweep

import (
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// UnmarshalYAML decodes sweep.rates: a list of requests/s ([1, 2.5, 4]), a progression mapping
// ({start, max, factor} or {start, max, step}) or auto. A value replaces the whole spec.
func (s *RatesSpec) UnmarshalYAML(n *yaml.Node) error {
	bad := func(line int, format string, args ...any) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: sweep.rates: %s", line, fmt.Sprintf(format, args...))}}
	}
	num := func(v *yaml.Node) (float64, bool) {
		if v.Kind != yaml.ScalarNode || (v.Tag != "!!int" && v.Tag != "!!float") {
			return 0, false
		}
		f, err := strconv.ParseFloat(v.Value, 64)
		return f, err == nil
	}
	switch n.Kind {
	case yaml.ScalarNode:
		if n.Value != "auto" {
			return bad(n.Line, "%q: want auto, a list such as [1, 2, 4] or a mapping such as {start: 1, max: 32, factor: 2}", n.Value)
		}
		*s = RatesSpec{Auto: true}
		return nil
	case yaml.SequenceNode:
		list := make([]float64, 0, len(n.Content))
		var errs []string
		for _, item := range n.Content {
			f, ok := num(item)
			if !ok {
				errs = append(errs, fmt.Sprintf("line %d: sweep.rates: %q is not a rate in requests/s", item.Line, item.Value))
				continue
			}
			list = append(list, f)
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		*s = RatesSpec{List: list}
		return nil
	case yaml.MappingNode:
		var out RatesSpec
		var errs []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			dst := map[string]*float64{"start": &out.Start, "max": &out.Max, "factor": &out.Factor, "step": &out.Step}[k.Value]
			if dst == nil {
				errs = append(errs, fmt.Sprintf("line %d: sweep.rates: field %s not found (want start, max, factor or step)", k.Line, k.Value))
				continue
			}
			f, ok := num(v)
			if !ok {
				errs = append(errs, fmt.Sprintf("line %d: sweep.rates.%s: %q is not a number", v.Line, k.Value, v.Value))
				continue
			}
			*dst = f
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		*s = out
		return nil
	default:
		return bad(n.Line, "want auto, a list such as [1, 2, 4] or a mapping such as {start: 1, max: 32, factor: 2}")
	}
}

// MarshalYAML writes auto, the list form, the progression mapping, or nothing for no rates.
func (s RatesSpec) MarshalYAML() (any, error) {
	switch {
	case s.Auto:
		return "auto", nil
	case len(s.List) > 0:
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, v := range s.List {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!float", Value: strconv.FormatFloat(v, 'g', -1, 64)})
		}
		return n, nil
	case s.IsZero():
		return nil, nil
	}
	type prog struct {
		Start  float64 `yaml:"start"`
		Max    float64 `yaml:"max"`
		Factor float64 `yaml:"factor,omitempty"`
		Step   float64 `yaml:"step,omitempty"`
	}
	return prog{Start: s.Start, Max: s.Max, Factor: s.Factor, Step: s.Step}, nil
}

// String formats the spec as it is written: "auto", "[1, 2.5, 4]", "1..32 ×2" or "2..20 +2".
func (s RatesSpec) String() string {
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch {
	case s.Auto:
		return "auto"
	case len(s.List) > 0:
		parts := make([]string, len(s.List))
		for i, v := range s.List {
			parts[i] = g(v)
		}
		return "[" + strings.Join(parts, ", ") + "]"
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
