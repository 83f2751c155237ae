package launch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/workload"
)

// budgetServer lists model m on /v1/models unless modelsSilent, answers a request for 2 tokens
// (the preflight's probe) when probeOK, and otherwise holds completions silent, or streams
// content without end when endless.
func budgetServer(t *testing.T, modelsSilent, probeOK, endless bool) string {
	t.Helper()
	release := make(chan struct{})
	chunk := `data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"z"}}]}` + "\n\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wait := func() {
			select {
			case <-r.Context().Done():
			case <-release:
			}
		}
		if r.URL.Path == "/v1/models" {
			if modelsSilent {
				wait()
				return
			}
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if probeOK && strings.Contains(string(body), `"max_tokens":2`) {
			fmt.Fprint(w, chunk, chunk, "data: [DONE]\n\n")
			return
		}
		if !endless {
			wait()
			return
		}
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(func() { close(release); srv.CloseClientConnections(); srv.Close() })
	return srv.URL + "/v1"
}

// budgetSweep is a sweep of url with an answer budget of 1 s, its console on log.
func budgetSweep(t *testing.T, url string, log io.Writer) (*Sweep, *Target) {
	t.Helper()
	cfg := config.Default()
	cfg.Target.URL, cfg.Target.Model, cfg.Target.AnswerBudget = url, "m", time.Second
	cfg.Workload.PromptSizing = "" // auto: the tokenize endpoint (404 here), then usage probes
	s := &Sweep{Env: Env{Log: log, Getenv: func(string) string { return "" }}, Cfg: cfg, Levels: []int{1},
		outDir: filepath.Join(t.TempDir(), "run")}
	t.Cleanup(s.Release)
	s.startBudget()
	tg, err := s.startTarget()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	return s, tg
}

// TestAnswerBudgetPreflight: with target.answer_budget 1 s, the preflight waits at most half of
// it. A server silent even on /v1/models is exit 3, the message naming the budget, with its
// results directory saying why it stopped (preflightHung); one that
// lists the model but never answers the probe, or streams past its max_tokens, is measured by
// the sweep instead (a warning, no error), so that its failure gets records and a report.
func TestAnswerBudgetPreflight(t *testing.T) {
	for _, c := range []struct {
		name                  string
		modelsSilent, endless bool
		code                  int
		want                  string
	}{
		{"nothing answers", true, false, exit.Unreachable, "(half of target.answer_budget 1s)"},
		{"the probe hangs", false, false, 0, "lists the model but the probe request failed"},
		{"the probe never ends", false, true, 0, "overlong: openai: stream: overlong: more content chunks than max_tokens 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var log bytes.Buffer
			s, tg := budgetSweep(t, budgetServer(t, c.modelsSilent, false, c.endless), &log)
			pre, cancel := s.probesContext(context.Background())
			defer cancel()
			start := time.Now()
			_, err := s.preflight(pre, tg)
			if el := time.Since(start); el > 500*time.Millisecond+2*time.Second {
				t.Errorf("the preflight took %v, want about half the budget (500ms)", el)
			}
			got := log.String()
			if err != nil {
				got = err.Error()
			}
			if exit.Code(err) != c.code || !strings.Contains(got, c.want) {
				t.Errorf("exit %d, %q: want exit %d naming %q", exit.Code(err), got, c.code, c.want)
			}
			if !c.modelsSilent {
				return
			}
			var stop *ProbeStoppedError
			if !errors.As(err, &stop) {
				t.Fatalf("%v: want a ProbeStoppedError, its directory written", err)
			}
			res, rerr := rundir.ReadMeta(s.Dir.Path())
			// Within what is left of half the budget: 500ms less the time since the budget began.
			want := regexp.MustCompile(`^preflight: the server accepted the connection and answered nothing within (4\d\d|500)ms: GET /models sent nothing \(the completion probe was not sent\)$`)
			if rerr != nil || !want.MatchString(res.StopReason) || len(res.Levels) != 0 {
				t.Errorf("results: %v, stop reason %q, %d levels: want it to match %s, none", rerr, res.StopReason, len(res.Levels), want)
			}
		})
	}
}

// TestAnswerBudgetSizing: a server that answers the preflight's probe but no other request holds
// the prompt sizing's usage probe until half the budget after that answer: the sizing falls back
// to words with a note naming the budget (before, it waited a minute).
func TestAnswerBudgetSizing(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	s, tg := budgetSweep(t, budgetServer(t, false, true, false), &log)
	var err error
	if s.workload, err = workload.NewWorkload(s.Cfg.Workload, s.Cfg.Target.API); err != nil {
		t.Fatal(err)
	}
	pre, cancel := s.probesContext(context.Background())
	defer cancel()
	if _, err := s.preflight(pre, tg); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.sizePrompts(context.Background(), tg, false); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 500*time.Millisecond+2*time.Second {
		t.Errorf("the sizing took %v, want at most half the budget (500ms)", el)
	}
	want := "usage: probe request of 1 words: cancelled: openai: request: target.answer_budget 1s: a wait before the first level ends at half of it (500ms) without an answer"
	if !strings.Contains(log.String(), want) || s.sizing == nil || s.sizing.Method != "words" {
		t.Errorf("sizing %v, log:\n%s\nwant words, noting %q", s.sizing, log.String(), want)
	}
}

// TestAnswerBudgetHeard: a preflight that answers starts the budget's clock again, however
// long it took: the first level then has the whole budget (before, a slow preflight and
// sizing spent it, and the first level of a slow server was cut as silent).
func TestAnswerBudgetHeard(t *testing.T) {
	t.Parallel()
	s, tg := budgetSweep(t, budgetServer(t, false, true, false), io.Discard)
	// A budget of 10 s begun 4 s ago (as if the waits before had taken that long): 1 s left to
	// the preflight, the first level's deadline 5 s away until the server answers.
	s.budget = record.NewAnswerBudget(time.Now().Add(-4*time.Second), 10*time.Second)
	if _, err := s.preflight(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	if b := s.budget; time.Until(b.Deadline()) <= 6*time.Second {
		t.Errorf("after the preflight's answer the first level's deadline is %v away, want about %v", time.Until(b.Deadline()), b.Budget/10*9)
	}
}

// TestAnswerBudgetHungSizing: after a preflight whose probe hung, prompts are sized in words
// with a note and no probe is sent, even with prompt_sizing usage (before: the usage probes
// waited out the budget's half and the sweep ended exit 2 with no records).
func TestAnswerBudgetHungSizing(t *testing.T) {
	t.Parallel()
	var log bytes.Buffer
	s, tg := budgetSweep(t, budgetServer(t, false, false, false), &log)
	s.Cfg.Workload.PromptSizing = "usage"
	var err error
	if s.workload, err = workload.NewWorkload(s.Cfg.Workload, s.Cfg.Target.API); err != nil {
		t.Fatal(err)
	}
	if err := s.sizePrompts(context.Background(), tg, true); err != nil {
		t.Fatal(err)
	}
	want := "the server did not answer the preflight's probe: prompts are sized in words"
	if s.sizing == nil || s.sizing.Method != "words" || !strings.Contains(log.String(), want) {
		t.Errorf("sizing %v, log:\n%s\nwant words, noting %q", s.sizing, log.String(), want)
	}
}

// TestPilotAnswersBudget: the --rates auto pilot's success answers the budget, an embeddings
// pilot's too, which streams no content chunk (before, it left the budget armed for the probe's
// levels).
func TestPilotAnswersBudget(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Target.API, cfg.Target.AnswerBudget = record.APIEmbeddings, time.Minute
	s := &Sweep{Env: Env{Log: io.Discard, Getenv: func(string) string { return "" }, Interrupt: context.Background()}, Cfg: cfg, Levels: []int{1}}
	s.startBudget()
	tg, err := s.startTarget()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(tg.Close)
	if s.workload, err = workload.NewWorkload(s.Cfg.Workload, s.Cfg.Target.API); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.pilot(context.Background(), tg); err != nil {
		t.Fatal(err)
	}
	if !s.budget.Answered() {
		t.Error("the pilot's answer did not answer the budget")
	}
}
