package launch

import (
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sweep"
)

// stopDisplay is a Display that keeps why the refiner stopped adding.
type stopDisplay struct{ stopped string }

func (d *stopDisplay) LevelStarted(int, int)      {}
func (d *stopDisplay) Live(sweep.LiveStats)       {}
func (d *stopDisplay) LevelFinished(record.Level) {}
func (d *stopDisplay) Adding(int, string)         {}
func (d *stopDisplay) AddingRate(float64, string) {}
func (d *stopDisplay) StopAdding(why string)      { d.stopped = why }

// TestRefinerStopsOnFailedAddedLevel: an added level whose requests failed (the server went
// down after the planned levels) stops the adding, with a reason naming the rule; a failed
// planned level is the Judge's business, not the refiner's.
func TestRefinerStopsOnFailedAddedLevel(t *testing.T) {
	cfg := config.Default()
	d := &stopDisplay{}
	r := announcingRefiner{analysis.NewRefiner(cfg.AnalysisOptions(), cfg.Sweep.Stop), d, false}
	const w0, w1 = int64(1_000_000_000), int64(2_000_000_000)
	level := func(index, c int, refine string, status record.Status) (record.LevelRun, []record.Record) {
		run := record.LevelRun{Index: index, Concurrency: c, W0: w0, W1: w1, Steady: true, Refine: refine}
		var recs []record.Record
		for i := range 20 {
			recs = append(recs, record.Record{Level: index, Concurrency: c, Worker: i % c, Phase: record.PhaseMeasure,
				Sent: w0 + int64(i)*40_000_000, Status: status, ErrorClass: record.ErrConnect})
		}
		return run, recs
	}
	r0, c0 := level(0, 1, "", record.StatusError)
	r1, c1 := level(1, 4, "test", record.StatusError)
	c, why := r.Refine([]record.Level{{Run: r0, Records: c0}, {Run: r1, Records: c1}})
	if c != 0 || !strings.Contains(why, "added level concurrency 4 had error rate 100.0%, above max_error_rate 5.0%") {
		t.Errorf("Refine = %g, %q; want 0 and the error-rate rule", c, why)
	}
	if !strings.HasPrefix(d.stopped, "added level concurrency 4") {
		t.Errorf("the display was told %q", d.stopped)
	}
	// The same failure on a planned level: the refiner analyzes (no valid level: no answer,
	// nothing to add) but gives no reason to stop.
	if c, why := r.Refine([]record.Level{{Run: r0, Records: c0}}); c != 0 || why != "" {
		t.Errorf("planned failure: Refine = %g, %q; want 0 and no reason", c, why)
	}
}
