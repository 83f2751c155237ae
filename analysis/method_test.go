package analysis

import (
	"encoding/json"
	"testing"
)

// Each method has one label; the estimates in Knee.Others are named on it.
func TestMethodLabels(t *testing.T) {
	tests := []struct {
		m               Method
		label, estimate string
	}{
		{MethodUSL, "USL", "USL peak"},
		{MethodBatch, "batch", "batch-model slot limit"},
		{MethodHinge, "hinge", "hinge breakpoint"},
		{MethodKneedle, "Kneedle", "Kneedle"},
		{method3xBaseline, "3x_baseline", "3x_baseline"},
		{Method("newer"), "newer", "newer"},
	}
	for _, tt := range tests {
		if got := tt.m.Label(); got != tt.label {
			t.Errorf("%q.Label() = %q, want %q", tt.m, got, tt.label)
		}
		if got := tt.m.EstimateLabel(); got != tt.estimate {
			t.Errorf("%q.EstimateLabel() = %q, want %q", tt.m, got, tt.estimate)
		}
	}
}

// analysis.json holds the methods' values as before Method was typed: the method names and
// the keys of knee.others, sorted, read back as the same Method; knee.rule likewise.
func TestMethodJSON(t *testing.T) {
	k := Knee{Concurrency: 32.6, TPS: 2000, Method: MethodBatch, Interval: [2]Float{NaN(), NaN()}, Rule: RulePlateauOnset,
		Others: map[Method]Float{MethodUSL: 66, MethodKneedle: 32, MethodBatch: 32.6, MethodHinge: 20}}
	b, err := json.Marshal(k)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"concurrency":32.6,"tps":2000,"method":"batch","interval":[null,null],"rule":"plateau_onset","others":{"batch":32.6,"hinge":20,"kneedle":32,"usl":66}}`
	if string(b) != want {
		t.Errorf("knee = %s, want %s", b, want)
	}
	var back Knee
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Method != MethodBatch || back.Rule != RulePlateauOnset || back.Others[MethodUSL] != 66 {
		t.Errorf("read back %+v", back)
	}
	b, err = json.Marshal(Blowup{Concurrency: 31, Method: method3xBaseline, BaselineMS: 12, SlopeMSPerUser: NaN()})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"concurrency":31,"method":"3x_baseline","baseline_ms":12,"slope_ms_per_user":null}`; string(b) != want {
		t.Errorf("blow-up = %s, want %s", b, want)
	}
}
