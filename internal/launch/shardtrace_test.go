package launch

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// TestShardTraceTooLong: a shard of a trace replay whose pass at a time scale is longer than
// the scheduled window is refused before anything is created (exit 2), naming the scale and
// the keys to change. The example trace's pass, about a minute, fits the default 3 min
// max_duration at time scale 1; at 0.25 it lasts four times as long.
func TestShardTraceTooLong(t *testing.T) {
	t.Parallel()
	file := filepath.Join("..", "..", "examples", "trace-mooncake.jsonl")
	tr, err := workload.LoadTrace(workload.TraceConfig{File: file})
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Sweep.Mode, cfg.Sweep.TimeScales = record.ModeRate, []float64{1}
	cfg.Workload.Trace.File = file
	cfg.Shard = config.ShardConfig{Index: 1, Count: 2, StartAt: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}
	if pass := tr.Pass(); pass > cfg.Sweep.MaxDuration || 4*pass <= cfg.Sweep.MaxDuration {
		t.Fatalf("the example's pass %v: want at most max_duration %v, and 4 passes past it", pass, cfg.Sweep.MaxDuration)
	}
	s := &Sweep{Env: Env{Log: &bytes.Buffer{}}, Cfg: cfg}
	if err := s.plan0(); err != nil {
		t.Errorf("time scale 1: %v, want none", err)
	}
	cfg.Sweep.TimeScales = []float64{1, 0.25}
	s = &Sweep{Env: Env{Log: &bytes.Buffer{}}, Cfg: cfg}
	err = s.plan0()
	if exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), "sweep: shard 1/2: time scale 0.25 (sweep.time_scales): one pass") ||
		!strings.Contains(err.Error(), "raise sweep.max_duration") {
		t.Errorf("time scale 0.25: %v (exit %d): want exit %d naming the scale and sweep.max_duration", err, exit.Code(err), exit.Usage)
	}
}
