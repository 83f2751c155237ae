package workload_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// TestTraceReaderEdges: the review's parsing findings. An Azure 2024 row (its TIMESTAMP
// with a UTC offset, as AzureLLMInferenceTrace_code_1week.csv of 2024 has it); a UTF-8
// byte-order mark before a Mooncake line; a Mooncake line with trailing garbage refused; the
// detection error naming the first non-empty line; an END past the data clamped and noted.
func TestTraceReaderEdges(t *testing.T) {
	az := "TIMESTAMP,ContextTokens,GeneratedTokens\n2024-05-10 00:00:00.009930+00:00,2048,28\n2024-05-10 00:00:01.509930+00:00,100,7\n"
	tf, err := workload.ParseTrace(strings.NewReader(az), "az.csv", "")
	if err != nil || tf.Format != record.TraceAzure || len(tf.Entries) != 2 || tf.Entries[1].At != 1500*time.Millisecond {
		t.Fatalf("azure 2024: %+v, %v: want 2 entries 1.5 s apart", tf, err)
	}
	bom := "\ufeff{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3}\n{\"timestamp\": 9, \"input_length\": 5, \"output_length\": 3}\n"
	if tf, err := workload.ParseTrace(strings.NewReader(bom), "bom.jsonl", ""); err != nil || tf.Format != record.TraceMooncake || len(tf.Entries) != 2 {
		t.Errorf("a byte-order mark: %v", err)
	}
	for text, want := range map[string]string{
		"{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3} trailing\n": "g.jsonl:1: not a Mooncake trace line",
		"\n\n  \ntime,in,out\n1,2,3\n":                                             "g.jsonl:4: not a trace this reads",
	} {
		if _, err := workload.ParseTrace(strings.NewReader(text), "g.jsonl", ""); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
	var b strings.Builder
	b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	for i := range 21 { // one a second, 0 … 20 s
		fmt.Fprintf(&b, "%d,ChatGPT,10,5,15,API log\n", i)
	}
	tf, _ = workload.ParseTrace(strings.NewReader(b.String()), "t", "")
	tr, err := workload.NewTrace(tf, workload.TraceConfig{File: "t", Window: "2s-22s"}) // 2 … 20: 18 s + 1 s, not 20 s
	if err != nil || tr.Pass() != 19*time.Second || !strings.Contains(tr.Info.Note, "past the trace's last arrival") {
		t.Errorf("window past the data: pass %v, note %q, %v: want 19 s and a note", tr.Pass(), tr.Info.Note, err)
	}
	if errs := workload.ValidateTimeScales("k", []float64{1, 2, 2}); len(errs) != 1 || !strings.Contains(errs[0].Error(), "k[2]: 2 after 2: the time scales must strictly increase") {
		t.Errorf("scales 1, 2, 2: %v", errs)
	}
}

// TestLoadTraceWindowed: LoadTrace cuts the window while parsing a file in time order, and
// reads an out-of-order one whole, sorted: both give the window of ParseTrace + NewTrace,
// with the file's absolute path and SHA-256 (of the whole file: `sha256sum`'s).
func TestLoadTraceWindowed(t *testing.T) {
	dir := t.TempDir()
	rows := []string{"0", "1", "3", "6", "10", "15", "21"}
	for name, order := range map[string][]int{"ordered": {0, 1, 2, 3, 4, 5, 6}, "shuffled": {3, 0, 6, 1, 5, 2, 4}} {
		var b strings.Builder
		b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
		for _, i := range order {
			fmt.Fprintf(&b, "%s,ChatGPT,%d,5,15,API log\n", rows[i], 10+i)
		}
		file := filepath.Join(dir, name+".csv")
		if err := os.WriteFile(file, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		tr, err := workload.LoadTrace(workload.TraceConfig{File: file, Window: "2s-16s"})
		if err != nil {
			t.Fatal(err)
		}
		if tr.Len() != 4 || tr.Pass() != 14*time.Second || tr.Entry(0).At != time.Second || tr.Entry(3).InputTokens != 15 || tr.Info.Path != file || len(tr.Info.SHA256) != 64 {
			t.Errorf("%s: %d requests, pass %v, first at %v, info %+v: want 4, 14 s, 1 s, the path and a sha256", name, tr.Len(), tr.Pass(), tr.Entry(0).At, tr.Info)
		}
	}
}

// TestTraceWindowMemory parses a generated BurstGPT trace of 200,000 rows (one every 10 ms,
// in time order, as BurstGPT's files are) with a window of 10 s: 1,000 rows kept. The heap
// retained (after a GC) per kept row stays under 200 bytes — an entry is 48 bytes — and
// the whole parse allocates under 2 KB a row of the file (reviewer: 2M rows took 462 MB
// before the window was cut while parsing).
func TestTraceWindowMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a 200,000-row trace")
	}
	const rows = 200_000
	var b strings.Builder
	b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	for i := range rows {
		fmt.Fprintf(&b, "%.2f,ChatGPT,%d,%d,0,Conversation log\n", float64(i)/100, 100+i%900, 1+i%300)
	}
	text := b.String()
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	tf, err := workload.ParseTraceIn(strings.NewReader(text), "big.csv", "", "100s-110s")
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if err != nil {
		t.Fatal(err)
	}
	kept := len(tf.Entries)
	perKept := float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(kept)
	perRow := float64(m1.TotalAlloc-m0.TotalAlloc) / rows
	t.Logf("%d of %d rows kept: %.0f bytes retained a kept row, %.0f allocated a row of the file", kept, tf.Total, perKept, perRow)
	if kept != 1000 || tf.Total != rows || perKept > 200 || perRow > 2048 {
		t.Errorf("%d kept of %d, %.0f bytes a kept row, %.0f allocated a row: want 1000 of %d, ≤ 200, ≤ 2048", kept, tf.Total, perKept, perRow, rows)
	}
	runtime.KeepAlive(tf)
	runtime.KeepAlive(text)
}
