package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPrintAnalysisNotWrapped: on a terminal stdout (a lineWrapper) analysis.json is written
// whole, its long lines unbroken, so what a user copies from the terminal is still JSON.
func TestPrintAnalysisNotWrapped(t *testing.T) {
	dir := t.TempDir()
	long := `{"warnings": ["` + strings.Repeat("word ", 40) + `"]}` + "\n"
	if err := os.WriteFile(filepath.Join(dir, "analysis.json"), []byte(long), 0o600); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	e := &env{stdout: lineWrapper{w: &out, width: func() int { return 40 }}}
	if err := printAnalysis(e, formatJSON, dir); err != nil {
		t.Fatal(err)
	}
	if out.String() != long {
		t.Errorf("printed %q, want the file unchanged %q", out.String(), long)
	}
}
