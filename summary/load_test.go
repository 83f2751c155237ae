package summary

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/kneecap/kneecap/analysis"
)

// A level-summary CSV file: its levels as ReadCSV reads them, the default options, the path
// as the source and the base name as the run's name; never analyzed in place.
func TestLoadCSV(t *testing.T) {
	path := filepath.Join(t.TempDir(), "h100.levels.csv")
	if err := os.WriteFile(path, []byte("concurrency,output_tps\n1,100\n2,190\n4,300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	in, err := Load(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Kind != CSV || in.InPlace() || in.Meta.Source != path || in.Meta.Name != "h100.levels" {
		t.Errorf("kind %v, in place %v, meta %+v", in.Kind, in.InPlace(), in.Meta)
	}
	if in.Options.KneeGain != analysis.DefaultOptions().KneeGain || in.Options.SLO != analysis.DefaultOptions().SLO {
		t.Errorf("options %+v, want the defaults", in.Options)
	}
	if l := in.Levels(analysis.Options{}); len(l) != 3 || l[2].Concurrency != 4 || l[2].OutputTPS != 300 {
		t.Errorf("levels %+v", l)
	}
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("# a comment\nconcurrency,output_tps\n1,100\n2,fast\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(bad, false); err == nil || err.Error() != bad+`:4: column "output_tps": "fast" is not a number` {
		t.Errorf("malformed CSV: %v", err)
	}
}

// A directory of vLLM bench results (testdata/vllm, see TestReadVLLMBench); any other
// directory is neither that nor a results directory.
func TestLoadVLLM(t *testing.T) {
	dir := filepath.Join("testdata", "vllm")
	in, err := Load(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	if in.Kind != vllmBench || in.InPlace() || in.Meta.Model != "meta-llama/Llama-3.1-8B-Instruct" || len(in.Levels(in.Options)) != 6 {
		t.Errorf("kind %v, in place %v, meta %+v", in.Kind, in.InPlace(), in.Meta)
	}
	empty := t.TempDir()
	want := empty + " is neither a results directory (no levels.json) nor vLLM bench results: read vllm bench: " + empty + ": no vLLM result JSON files (*.json with max_concurrency)"
	if _, err := Load(empty, false); err == nil || err.Error() != want {
		t.Errorf("empty dir: %v\nwant %s", err, want)
	}
}

func TestLoadMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.csv")
	_, err := Load(path, false)
	if !errors.Is(err, fs.ErrNotExist) || err.Error() != path+": no such file or directory" {
		t.Errorf("missing path: %v", err)
	}
}
