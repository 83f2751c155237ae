package launch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/sweep"
	"github.com/kneecap/kneecap/workload"
)

// nopProgress is a Progress that shows nothing.
type nopProgress struct{}

func (nopProgress) LevelStarted(int, int)        {}
func (nopProgress) Live(sweep.LiveStats)         {}
func (nopProgress) LevelFinished(l record.Level) {}
func (nopProgress) Close()                       {}

// pilotThen500s lists model m and answers the first completion request (the pilot) with a
// stream, every later one with a 500.
func pilotThen500s(t *testing.T) string {
	t.Helper()
	var posts atomic.Int64
	chunk := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"z"}}]}` + "\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		if posts.Add(1) > 1 {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, chunk, chunk, "data: [DONE]\n\n")
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// probeSweep is a --rates auto sweep of url (model m, prompts sized in words, windows of
// 100 ms) with no answer budget, its target started and its results directory created.
func probeSweep(t *testing.T, url string) (*Sweep, *Target, string) {
	t.Helper()
	cfg := config.Default()
	cfg.Target.URL, cfg.Target.Model = url, "m"
	cfg.Workload.PromptSizing = "words"
	cfg.Sweep.Warmup, cfg.Sweep.Duration, cfg.Sweep.MaxDuration = 20*time.Millisecond, 100*time.Millisecond, 100*time.Millisecond
	s := &Sweep{Env: Env{Log: io.Discard, Getenv: func(string) string { return "" }, Interrupt: context.Background()}, Cfg: cfg, Levels: []int{1}}
	tg, err := s.startTarget()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	if s.workload, err = workload.NewWorkload(cfg.Workload, cfg.Target.API); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	if s.Dir, err = rundir.Create(dir, cfg, tg.Endpoint, time.Now()); err != nil {
		t.Fatal(err)
	}
	return s, tg, dir
}

// TestProbeLevelsFailStopped: when the --rates auto pilot answers but every probe level
// fails (a burst of 500s stops the probe by its error rate), the probe has no max QPS and
// stops as one whose pilot failed: probe.json holds its levels, levels.json its stop reason,
// the error is a ProbeStoppedError (exit 1) for the caller to report (before: exit 1 with
// config.yaml and levels.json alone). Such a stopped run is finished: --resume refuses it,
// pointing at kneecap analyze.
func TestProbeLevelsFailStopped(t *testing.T) {
	t.Parallel()
	s, tg, dir := probeSweep(t, pilotThen500s(t))
	_, err := s.runProbe(context.Background(), tg, func([]int, sweep.Protocol) Progress { return nopProgress{} })
	s.Dir.Close()
	var stop *ProbeStoppedError
	if !errors.As(err, &stop) || exit.Code(err) != exit.Failure || !strings.Contains(err.Error(), "no max QPS") {
		t.Fatalf("%v (exit %d), want a stopped probe, exit 1, naming no max QPS", err, exit.Code(err))
	}
	b, rerr := os.ReadFile(filepath.Join(dir, rundir.ProbeFile))
	if rerr != nil || !strings.Contains(string(b), `"concurrency": 1`) {
		t.Errorf("probe.json (%v) does not hold the probe's level:\n%s", rerr, b)
	}
	_, _, rerr = rundir.Resume(dir)
	if !errors.Is(rerr, rundir.ErrFinished) || !strings.Contains(rerr.Error(), "--rates auto probe: ") ||
		!strings.Contains(rerr.Error(), "kneecap analyze "+dir) {
		t.Errorf("resume: %v, want it finished by the probe's stop, pointing at kneecap analyze", rerr)
	}
}

// TestSilentPilotNeverAnswered: a --rates auto pilot cut by the answer budget of a server that
// answered nothing at all is a NeverAnsweredError, which stops a grid (before: a stopped probe
// alone, and each scenario of a rate grid waited out the budget); once the server has answered
// something (the preflight), it is a stopped probe alone.
func TestSilentPilotNeverAnswered(t *testing.T) {
	t.Parallel()
	for _, heard := range []bool{false, true} {
		t.Run(fmt.Sprintf("heard %v", heard), func(t *testing.T) {
			t.Parallel()
			s, tg, _ := probeSweep(t, budgetServer(t, false, false, false))
			s.budget = record.NewAnswerBudget(time.Now(), 200*time.Millisecond)
			if heard {
				s.budget.Heard(time.Now())
			}
			_, err := s.runProbe(context.Background(), tg, func([]int, sweep.Protocol) Progress { return nopProgress{} })
			s.Dir.Close()
			var stop *ProbeStoppedError
			var never *NeverAnsweredError
			if !errors.As(err, &stop) || exit.Code(err) != exit.Failure || errors.As(err, &never) != !heard {
				t.Errorf("%v (exit %d), want a stopped probe, exit 1, never answered %v", err, exit.Code(err), !heard)
			}
		})
	}
}
