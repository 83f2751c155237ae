package server

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// fakeNvidiaSMI puts a shell script named nvidia-smi first on the PATH. Called with exactly
// the query kneecap runs, it prints out, or, with out empty, fails as nvidia-smi does without
// a driver; other arguments fail naming them.
func fakeNvidiaSMI(t *testing.T, out string) {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("the fake nvidia-smi is a shell script")
	}
	body := "cat <<'EOF'\n" + out + "EOF\n"
	if out == "" {
		body = "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2\nexit 9\n"
	}
	script := "#!/bin/sh\n" +
		"if [ \"$*\" != '" + strings.Join(nvidiaSMIArgs, " ") + "' ]; then echo \"unexpected arguments: $*\" >&2; exit 2; fi\n" + body
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "nvidia-smi"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// The output of the query in nvidia-smi's csv,noheader,nounits format: GPU 1 cannot report
// its power ([N/A], as nvidia-smi prints a field it has not got).
const smiOut = `0, GPU-5fd4f087-86f3-7a43-b711-4771313afc50, NVIDIA H100 80GB HBM3, 312.45, 87, 71234, 1980
1, GPU-1df3e374-2435-dc0a-53d1-52a93108d331, NVIDIA H100 80GB HBM3, [N/A], 0, 4, 345
`

// nvidia-smi as a real process: a fake on the PATH, its output parsed; match selects GPU 0.
func TestNvidiaSMISampler(t *testing.T) {
	fakeNvidiaSMI(t, smiOut)
	s, err := NewGPUSampler(GPUSamplerOptions{NvidiaSMI: true, Interval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sample, err := s.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(sample.GPUs) != 2 || s.From() != "nvidia-smi" || s.Source() != "nvidia-smi" {
		t.Fatalf("sample %+v from %q", sample, s.From())
	}
	g0, g1 := sample.GPUs[0], sample.GPUs[1]
	if g0.Index != "0" || g0.UUID != "GPU-5fd4f087-86f3-7a43-b711-4771313afc50" || g0.Model != "NVIDIA H100 80GB HBM3" {
		t.Errorf("GPU 0 %+v", g0.GPU)
	}
	if deref(g0.PowerW) != "312.45" || deref(g0.UtilPct) != "87" || deref(g0.FBUsedMiB) != "71234" || deref(g0.SMClockMHz) != "1980" {
		t.Errorf("GPU 0 power %s util %s fb %s clock %s", deref(g0.PowerW), deref(g0.UtilPct), deref(g0.FBUsedMiB), deref(g0.SMClockMHz))
	}
	if g1.PowerW != nil || g0.EnergyMJ != nil {
		t.Errorf("GPU 1 power %s ([N/A]), GPU 0 energy %s (nvidia-smi has no counter)", deref(g1.PowerW), deref(g0.EnergyMJ))
	}

	m, _ := CompileGPUMatch(map[string]string{"UUID": "GPU-5fd4.*"})
	s, _ = NewGPUSampler(GPUSamplerOptions{NvidiaSMI: true, Match: m})
	gs, err := s.Probe(context.Background())
	if err != nil || len(gs) != 1 || gs[0].Index != "0" {
		t.Errorf("matched %+v, %v; want GPU 0", gs, err)
	}
}

// A failing nvidia-smi is a counted error naming its message, never a reading.
func TestNvidiaSMIFails(t *testing.T) {
	fakeNvidiaSMI(t, "")
	s, _ := NewGPUSampler(GPUSamplerOptions{NvidiaSMI: true})
	_, err := s.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "could not communicate with the NVIDIA driver") {
		t.Errorf("err = %v, want nvidia-smi's message", err)
	}
	if n, _ := s.Errors(); n != 1 || len(s.Samples()) != 0 {
		t.Errorf("%d errors, %d samples; want 1, 0", n, len(s.Samples()))
	}
}
