package config

import (
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/workload"
)

// TestLoadSessions: workload.sessions decodes; with target.api completions or a rate sweep it
// is refused, naming both keys and the line of workload.sessions; a session problem names
// its key and line.
func TestLoadSessions(t *testing.T) {
	c, err := Load(writeConfig(t, "workload:\n  sessions:\n    turns: {dist: fixed, mean: 3}\n    think_time: 2s\n    user_tokens: {dist: fixed, mean: 200}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s := c.Workload.Sessions
	if s == nil || s.Turns != (workload.Dist{Dist: workload.DistFixed, Mean: 3}) || s.ThinkTime != 2*time.Second || s.UserTokens.Mean != 200 {
		t.Fatalf("sessions %+v", s)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"target:\n  api: completions\nworkload:\n  sessions:\n    turns: {dist: fixed, mean: 3}\n",
			":4: workload.sessions: needs target.api chat"},
		{"sweep:\n  mode: rate\n  rates: [1, 2]\nworkload:\n  sessions:\n    turns: {dist: fixed, mean: 3}\n",
			":5: workload.sessions: a conversation is a closed loop of turns: it cannot be run by an arrival-rate sweep (sweep.mode rate, --rates)"},
		{"workload:\n  sessions:\n    turns: {dist: fixed, mean: 0}\n",
			":3: workload.sessions.turns.mean: is 0: must be ≥ 1 turn"},
		{"workload:\n  prefix_cache: true\n  sessions:\n    turns: {dist: fixed, mean: 3}\n",
			":3: workload.sessions: cannot go with workload.prefix_cache: true"},
		{"workload:\n  sessions:\n    think_time: 1s\n",
			"workload.sessions.turns: missing"},
	} {
		_, err := Load(writeConfig(t, tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v, want %q", tc.yaml, err, tc.want)
		}
	}
}
