package config

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/workload"
)

// TestLoadModels: workload.models decodes; a mix of one entry is allowed; each problem (an
// empty or repeated name, a weight ≤ 0) names its entry's key and line; a mix stands in for
// target.model beside target.url.
func TestLoadModels(t *testing.T) {
	c, err := Load(writeConfig(t, "target:\n  url: http://127.0.0.1:8000/v1\nworkload:\n  models:\n    - {name: base, weight: 5}\n    - {name: sql-lora, weight: 3}\n    - name: chat-lora\n      weight: 2\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []workload.ModelWeight{{Name: "base", Weight: 5}, {Name: "sql-lora", Weight: 3}, {Name: "chat-lora", Weight: 2}}
	if len(c.Workload.Models) != 3 || c.Workload.Models[0] != want[0] || c.Workload.Models[1] != want[1] || c.Workload.Models[2] != want[2] {
		t.Fatalf("models %+v, want %+v", c.Workload.Models, want)
	}
	if _, err := Load(writeConfig(t, "workload:\n  models: [{name: only, weight: 1}]\n")); err != nil {
		t.Errorf("a mix of one model: %v", err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"workload:\n  models:\n    - {name: a, weight: 1}\n    - {name: '', weight: 1}\n",
			":4: workload.models[1].name: is empty"},
		{"workload:\n  models:\n    - {name: a, weight: 1}\n    - {name: b, weight: 1}\n    - {name: a, weight: 2}\n",
			`:5: workload.models[2].name: "a" is also workload.models[0]`},
		{"workload:\n  models:\n    - {name: a, weight: 1}\n    - name: b\n      weight: 0\n",
			":5: workload.models[1].weight: is 0: must be > 0"},
		{"workload:\n  models:\n    - {name: a, weight: -2}\n",
			":3: workload.models[0].weight: is -2: must be > 0"},
		{"workload:\n  models:\n    - {name: ' a', weight: 1}\n",
			`:3: workload.models[0].name: " a" has whitespace`},
		{"workload:\n  models:\n    - {name: a, weight: 1}\n    - {name: \"b\\e[2J\", weight: 1}\n",
			`:4: workload.models[1].name: "b\x1b[2J" has a control character`},
		{"target:\n  url: http://127.0.0.1:8000/v1\n  model: \"m\\a\"\n",
			`:3: target.model: "m\a" has a control character`},
	} {
		_, err := Load(writeConfig(t, tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
