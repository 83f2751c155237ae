package sweep

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// maxLevels bounds the number of levels a progression may expand to.
const maxLevels = 1000

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
	bad := func(line int, format string, args ...any) error {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: sweep.levels: %s", line, fmt.Sprintf(format, args...))}}
	}
	switch n.Kind {
	case yaml.SequenceNode:
		list := make([]int, 0, len(n.Content))
		var errs []string
		for _, item := range n.Content {
			v, err := strconv.Atoi(item.Value)
			if item.Kind != yaml.ScalarNode || item.Tag != "!!int" || err != nil {
				errs = append(errs, fmt.Sprintf("line %d: sweep.levels: %q is not an integer concurrency", item.Line, item.Value))
				continue
			}
			list = append(list, v)
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		*l = LevelsSpec{List: list}
		return nil
	case yaml.MappingNode:
		var out LevelsSpec
		var errs []string
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			var err error
			switch k.Value {
			case "start":
				err = v.Decode(&out.Start)
			case "max":
				err = v.Decode(&out.Max)
			case "factor":
				err = v.Decode(&out.Factor)
			case "step":
				err = v.Decode(&out.Step)
			default:
				errs = append(errs, fmt.Sprintf("line %d: sweep.levels: field %s not found (want start, max, factor or step)", k.Line, k.Value))
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Sprintf("line %d: sweep.levels.%s: %q is not a number", v.Line, k.Value, v.Value))
			}
		}
		if len(errs) > 0 {
			return &yaml.TypeError{Errors: errs}
		}
		*l = out
		return nil
	default:
		return bad(n.Line, "want a list such as [1, 2, 4] or a mapping such as {start: 1, max: 256, factor: 2}")
	}
}

// MarshalYAML writes the list form when List is set, else the progression mapping.
func (l LevelsSpec) MarshalYAML() (any, error) {
	if len(l.List) > 0 {
		n := &yaml.Node{Kind: yaml.SequenceNode, Style: yaml.FlowStyle}
		for _, v := range l.List {
			n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!int", Value: strconv.Itoa(v)})
		}
		return n, nil
	}
	type prog struct {
		Start  int     `yaml:"start"`
		Max    int     `yaml:"max"`
		Factor float64 `yaml:"factor,omitempty"`
		Step   int     `yaml:"step,omitempty"`
	}
	return prog{Start: l.Start, Max: l.Max, Factor: l.Factor, Step: l.Step}, nil
}

// String formats the spec as it is written in YAML: "[1, 2, 4]", "1..256 ×2" or "8..64 +8".
func (l LevelsSpec) String() string {
	switch {
	case len(l.List) > 0:
		parts := make([]string, len(l.List))
		for i, v := range l.List {
			parts[i] = strconv.Itoa(v)
		}
		return "[" + strings.Join(parts, ", ") + "]"
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
			return fmt.Errorf("more than %d levels: raise factor or step, or lower max", maxLevels)
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
