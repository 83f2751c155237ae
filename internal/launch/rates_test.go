package launch

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/internal/exit"
	"github.com/kneecap/kneecap/rundir"
	"github.com/kneecap/kneecap/workload"
)

// TestResumedTrace (review finding 7): a new trace replay makes config.yaml keep the trace's
// absolute path (so --resume works from any directory); --resume accepts the same file
// (keeping the name the run gave it) and refuses one whose content changed, exit 2, naming
// both files and hashes.
func TestResumedTrace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "t.jsonl")
	write := func(text string) *workload.Trace {
		if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := workload.LoadTrace(workload.TraceConfig{File: file})
		if err != nil {
			t.Fatal(err)
		}
		return tr
	}
	rows := "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3}\n{\"timestamp\": 500, \"input_length\": 5, \"output_length\": 3}\n"
	tr := write(rows)
	s := &Sweep{}
	s.Cfg.Workload.Trace.File = "t.jsonl"
	if err := s.resumedTrace(tr); err != nil || s.Cfg.Workload.Trace.File != file {
		t.Fatalf("a new run: %v, config keeps %q: want %q", err, s.Cfg.Workload.Trace.File, file)
	}
	was := tr.Info
	was.File = "examples/t.jsonl"
	s = &Sweep{done: &rundir.Run{Dir: "run", Trace: &was}}
	if err := s.resumedTrace(write(rows)); err != nil {
		t.Errorf("resume of the same trace: %v", err)
	}
	changed := write(rows + "{\"timestamp\": 900, \"input_length\": 5, \"output_length\": 3}\n")
	err := s.resumedTrace(changed)
	if exit.Code(err) != exit.Usage || !strings.Contains(err.Error(), "is not the one the run replayed") ||
		!strings.Contains(err.Error(), was.SHA256) || !strings.Contains(err.Error(), changed.Info.SHA256) {
		t.Errorf("resume of a changed trace: exit %d: %v: want exit 2 naming both hashes", exit.Code(err), err)
	}
}
