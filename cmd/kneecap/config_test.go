package main

// The configurations kneecap ships: examples/, the demo, the default results directory.

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/kneecap/kneecap/config"
	"github.com/kneecap/kneecap/rundir"
)

func TestExamplesLoad(t *testing.T) {
	files, err := filepath.Glob("../../examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"sim.yaml": false, "vllm.yaml": false, "sglang.yaml": false,
		"llamacpp.yaml": false, "ollama.yaml": false, "openai.yaml": false}
	for _, f := range files {
		c, err := config.Load(f)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if _, err := c.Sweep.Levels.Expand(); err != nil {
			t.Errorf("%s: levels: %v", f, err)
		}
		want[filepath.Base(f)] = true
	}
	for f, ok := range want {
		if !ok {
			t.Errorf("examples/%s missing", f)
		}
	}
}

func TestDemoConfigValid(t *testing.T) {
	c := config.Demo()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	levels, _ := c.Sweep.Levels.Expand()
	if want := []int{1, 2, 4, 8, 16, 32, 64, 128}; !reflect.DeepEqual(levels, want) {
		t.Errorf("demo levels %v, want %v", levels, want)
	}
}

func TestResultsDirPath(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	c := config.Default()
	c.Target.Model = "meta-llama/Llama-3.1-8B"
	if got, want := rundir.DefaultPath(c, now), filepath.Join("runs", "20250102T030405Z-Llama-3.1-8B"); got != want {
		t.Errorf("resultsDirPath = %q, want %q", got, want)
	}
	c.Name = "demo"
	if got, want := rundir.DefaultPath(c, now), filepath.Join("runs", "20250102T030405Z-demo"); got != want {
		t.Errorf("resultsDirPath = %q, want %q", got, want)
	}
	c.Output.Dir = "out/x"
	if got := rundir.DefaultPath(c, now); got != "out/x" {
		t.Errorf("resultsDirPath = %q, want out/x", got)
	}
}
