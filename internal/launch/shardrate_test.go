package launch

import (
	"bytes"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// TestShardAutoRates: a shard plans --rates auto only from --from DIR: the rates one process
// plans from DIR, so every shard's are the same. Without --from it is refused (exit 2),
// saying to probe first and pass the same rates to every shard.
func TestShardAutoRates(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "examples", "sample-run")
	cfg := config.Default()
	cfg.Sweep.Mode, cfg.Sweep.Rates = record.ModeRate, sweep.RatesSpec{Auto: true}
	_, nominal := cfg.Workload.NominalLengths()
	want, err := probeFrom(dir, cfg.AnalysisOptions(), nominal)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Shard = config.ShardConfig{Index: 1, Count: 2, StartAt: "2026-11-30T10:00:00Z"}
	s := &Sweep{Cfg: cfg, from: dir}
	if _, err := s.planRates(); err != nil || !slices.Equal(s.Rates, want.Rates) {
		t.Errorf("shard 1/2 --rates auto --from: rates %v (%v), want %v", s.Rates, err, want.Rates)
	}
	s = &Sweep{Cfg: cfg}
	_, err = s.planRates()
	if exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), "probe first") || s.Rates != nil {
		t.Errorf("shard 1/2 --rates auto: %v (exit %d), rates %v: want exit %d saying to probe first", err, exit.Code(err), s.Rates, exit.Usage)
	}
}

// TestShardRatePlan: a shard of a rate sweep runs the rate plan (its rates, arrival process and
// cap) on the schedule, with neither Judge nor Refiner, and says on the console which arrivals
// it sends and its part of the cap.
func TestShardRatePlan(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Sweep.Mode, cfg.Sweep.Rates, cfg.Sweep.MaxConcurrency = record.ModeRate, sweep.RatesSpec{List: []float64{1, 2}}, 9
	cfg.Shard = config.ShardConfig{Index: 1, Count: 2, StartAt: "2026-11-30T10:00:00Z"}
	var log bytes.Buffer
	s := &Sweep{Env: Env{Log: &log}, Cfg: cfg, Rates: []float64{1, 2}, Levels: []int{9},
		schedule: &sweep.Schedule{Start: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), Shard: 1, Shards: 2}}
	s.schedule.Clock = s.readClock // as plan0 sets it on every shard
	plan := s.Plan(nil)
	if !slices.Equal(plan.Rates, s.Rates) || plan.Levels != nil || plan.MaxConcurrency != 9 || plan.Schedule != s.schedule ||
		plan.Judge != nil || plan.Refiner != nil {
		t.Errorf("plan: rates %v levels %v cap %d schedule %v judge %v refiner %v: want the rate plan on the schedule, no judge or refiner",
			plan.Rates, plan.Levels, plan.MaxConcurrency, plan.Schedule, plan.Judge, plan.Refiner)
	}
	if want := "level 2, the last to run"; !strings.Contains(log.String(), want) ||
		!strings.Contains(log.String(), "this shard sends arrivals 1, 3, 5, … of it, at most 5 in flight (max_concurrency 9 ÷ 2)") {
		t.Errorf("console: %s\nwant the two levels, arrivals 1, 3, 5, … and 5 of the 9 slots", log.String())
	}
	// Launch gives every shard a Clock: the line says it reads one only with a clock server.
	if want := "It trusts this machine's clock (NTP; no --clock-server)"; !strings.Contains(log.String(), want) || strings.Contains(log.String(), "reads its clock") {
		t.Errorf("console without --clock-server: %s\nwant %q and no reading", log.String(), want)
	}
	log.Reset()
	s.Cfg.Shard.ClockServer = "h0:7070"
	s.Plan(nil)
	if want := "reads its clock against the clock server h0:7070"; !strings.Contains(log.String(), want) || strings.Contains(log.String(), "trusts") {
		t.Errorf("console with --clock-server: %s\nwant %q", log.String(), want)
	}
}
