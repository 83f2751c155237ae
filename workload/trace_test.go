package workload_test

import (
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/workload"
)

// The three formats' lines follow the published examples: Mooncake's mooncake_trace.jsonl
// as NVIDIA Dynamo's benchmarks/data_generator/README.md quotes it, BurstGPT's README (HPMLL/
// BurstGPT, release v1.1: 0 response tokens = a failed request) and the Azure LLM inference
// trace's CSV header (Azure/AzurePublicDataset, AzureLLMInferenceTrace_*.csv).

const mooncakeSample = `{"timestamp": 0, "input_length": 6755, "output_length": 500, "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}
{"timestamp": 0, "input_length": 7319, "output_length": 490, "hash_ids": [0, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27]}
{"timestamp": 3052, "input_length": 7234, "output_length": 794, "hash_ids": [0, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41]}

{"timestamp": 3052, "input_length": 2287, "output_length": 316, "hash_ids": [0, 42, 43, 44, 45]}
`

const burstSample = `Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type
5,ChatGPT,472,18,490,Conversation log
45,ChatGPT,1087,230,1317,Conversation log
118,GPT-4,417,276,693,Conversation log
1106,ChatGPT,0,0,0,Conversation log
`

const azureSample = `TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:51.0000000,879,4
`

func TestParseTraceFormats(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		format     record.TraceFormat
		n, skipped int
		last       time.Duration
		in, out    int32 // the last entry's
	}{
		{"mooncake", mooncakeSample, record.TraceMooncake, 4, 0, 3052 * time.Millisecond, 2287, 316},
		{"burstgpt", burstSample, record.TraceBurstGPT, 3, 1, 113 * time.Second, 417, 276},
		{"azure", azureSample, record.TraceAzure, 3, 0, 4319410 * time.Microsecond, 879, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, f := range []record.TraceFormat{"", record.TraceAuto, tc.format} {
				tf, err := workload.ParseTrace(strings.NewReader(tc.text), "t", f)
				if err != nil {
					t.Fatal(err)
				}
				if tf.Format != tc.format || len(tf.Entries) != tc.n || tf.Skipped != tc.skipped {
					t.Fatalf("format %s, %d entries, %d skipped: want %s, %d, %d", tf.Format, len(tf.Entries), tf.Skipped, tc.format, tc.n, tc.skipped)
				}
				e := tf.Entries[tc.n-1]
				if tf.Entries[0].At != 0 || e.At != tc.last || e.InputTokens != tc.in || e.OutputTokens != tc.out {
					t.Errorf("first at %v, last %+v: want 0 and at %v, %d in, %d out", tf.Entries[0].At, e, tc.last, tc.in, tc.out)
				}
			}
		})
	}
	tf, _ := workload.ParseTrace(strings.NewReader(mooncakeSample), "t", "")
	if got := tf.Entries[3].HashIDs; len(got) != 5 || got[0] != 0 || got[4] != 45 || tf.Entries[3].Line != 5 {
		t.Errorf("hash_ids %v line %d: want [0 42 43 44 45] on line 5", got, tf.Entries[3].Line)
	}
}

func TestParseTraceBadLines(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		format     record.TraceFormat
		want       string
	}{
		{"mooncake json", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3}\n{\"timestamp\": 1, \"input_length\": oops}\n", "", "f.jsonl:2: not a Mooncake trace line"},
		{"mooncake missing", "{\"timestamp\": 0, \"input_length\": 5}\n", "", "f.jsonl:1: a Mooncake line needs timestamp, input_length and output_length"},
		{"mooncake negative", "\n{\"timestamp\": -4, \"input_length\": 5, \"output_length\": 3}\n", "", "f.jsonl:2: timestamp -4"},
		{"burst count", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,many,18,490,Conversation log\n", "", "f.jsonl:2: Request tokens \"many\""},
		{"burst header", "Timestamp,Model,Request tokens,Total tokens\n", record.TraceBurstGPT, "f.jsonl:1: burstgpt trace header"},
		{"azure time", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,3,4\nyesterday,3,4\n", "", "f.jsonl:3: TIMESTAMP \"yesterday\""},
		{"unknown", "time,in,out\n1,2,3\n", "", "f.jsonl:1: not a trace this reads"},
		{"empty", "\n\n", "", "f.jsonl: empty trace file"},
		{"all failed", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,ChatGPT,472,0,472,Conversation log\n", "", "no usable requests in the burstgpt trace (1 skipped)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := workload.ParseTrace(strings.NewReader(tc.text), "f.jsonl", tc.format)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestTraceWindowAndScale: a window keeps the requests arriving in it, its pass is END −
// START (or, open-ended, to the last arrival plus one mean gap), the mean rate Requests ÷
// pass, and the gaps at scale s are the trace's gaps ÷ s, the next pass starting one pass
// later.
func TestTraceWindowAndScale(t *testing.T) {
	var b strings.Builder
	b.WriteString("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n")
	for _, s := range []string{"0", "1", "3", "6", "10", "15", "21"} { // gaps 1, 2, 3, 4, 5, 6 s
		b.WriteString(s + ",ChatGPT,10,5,15,API log\n")
	}
	tf, err := workload.ParseTrace(strings.NewReader(b.String()), "t", "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		window string
		n      int
		pass   time.Duration
		first  time.Duration // the first arrival from the window's start
	}{
		{"", 7, 24500 * time.Millisecond, 0},                     // 21 s + 21 s ÷ 6
		{"2s-16s", 4, 14 * time.Second, time.Second},             // 3, 6, 10, 15
		{"3s-", 5, 18*time.Second + 4500*time.Millisecond, 0},    // 3 … 21: 18 s + 18 s ÷ 4
		{"-5s", 3, 5 * time.Second, 0},                           // 0, 1, 3
		{"10s-1h", 3, 11*time.Second + 5500*time.Millisecond, 0}, // 10, 15, 21: past the end
		{"10s-22s", 3, 12 * time.Second, 0},                      // 16.5 s clamped to END − START
	} {
		tr, err := workload.NewTrace(tf, workload.TraceConfig{File: "t", Window: tc.window})
		if err != nil {
			t.Fatalf("window %q: %v", tc.window, err)
		}
		if tr.Len() != tc.n || tr.Pass() != tc.pass || tr.Entry(0).At != tc.first {
			t.Errorf("window %q: %d requests, pass %v, first at %v: want %d, %v, %v", tc.window, tr.Len(), tr.Pass(), tr.Entry(0).At, tc.n, tc.pass, tc.first)
		}
		if want := float64(tc.n) / tc.pass.Seconds(); tr.Info.MeanRPS != want || tr.Rate(2) != 2*want || tr.Scale(2*want) != 2 {
			t.Errorf("window %q: mean %v, rate(2) %v, scale %v: want %v, %v, 2", tc.window, tr.Info.MeanRPS, tr.Rate(2), tr.Scale(2*want), want, 2*want)
		}
	}
	tr, _ := workload.NewTrace(tf, workload.TraceConfig{File: "t"})
	gaps := tr.Gaps(4)
	want := []time.Duration{0, 250, 500, 750, 1000, 1250, 1500, (24500 - 21000) / 4, 250} // ms: second pass 24.5 s ÷ 4 later
	for i, w := range want {
		if g := gaps(); g != w*time.Millisecond {
			t.Errorf("gap %d at scale 4: %v, want %v", i, g, w*time.Millisecond)
		}
	}
	for _, bad := range []string{"10m", "5m-2m", "a-b", "-3s-"} {
		if _, err := workload.NewTrace(tf, workload.TraceConfig{File: "t", Window: bad}); err == nil {
			t.Errorf("window %q accepted", bad)
		}
	}
	if _, err := workload.NewTrace(tf, workload.TraceConfig{File: "t", Window: "4s-5s"}); err == nil || !strings.Contains(err.Error(), "holds 0 requests") {
		t.Errorf("an empty window: %v", err)
	}
}

// FuzzParseTrace: no input panics the trace readers, and a trace they accept has its
// entries sorted from 0 with lengths ≥ 1 (seeds: the three formats' samples).
func FuzzParseTrace(f *testing.F) {
	for _, s := range []string{mooncakeSample, burstSample, azureSample, "{}\n", "TIMESTAMP,ContextTokens,GeneratedTokens\n,,\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		tf, err := workload.ParseTrace(strings.NewReader(text), "fuzz", "")
		if err != nil {
			return
		}
		for i, e := range tf.Entries {
			if e.At < 0 || i > 0 && e.At < tf.Entries[i-1].At || e.InputTokens < 1 || e.OutputTokens < 1 {
				t.Fatalf("entry %d %+v: want sorted times ≥ 0 and lengths ≥ 1", i, e)
			}
		}
	})
}

// TestTraceUnorderedNoted: a trace whose arrivals are not in time order is replayed sorted,
// and its Info.Note says so, with the count and the first line out of order (issue 26: it was
// sorted without a word).
func TestTraceUnorderedNoted(t *testing.T) {
	text := `{"timestamp": 100, "input_length": 5, "output_length": 3}
{"timestamp": 0, "input_length": 5, "output_length": 3}
{"timestamp": 50, "input_length": 5, "output_length": 3}
`
	tf, err := workload.ParseTrace(strings.NewReader(text), "t.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := workload.NewTrace(tf, workload.TraceConfig{File: "t.jsonl"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "not in time order (2 earlier than one before them, the first at line 2): replayed sorted by arrival"; !strings.Contains(tr.Info.Note, want) {
		t.Errorf("note %q, want it to say %q", tr.Info.Note, want)
	}
	if tf.Entries[0].At != 0 || tf.Entries[1].At != 50*time.Millisecond || tf.Entries[2].At != 100*time.Millisecond {
		t.Errorf("entries not sorted: %+v", tf.Entries)
	}
	sorted := "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 3}\n{\"timestamp\": 50, \"input_length\": 5, \"output_length\": 3}\n"
	tf, _ = workload.ParseTrace(strings.NewReader(sorted), "s.jsonl", "")
	if tr, err := workload.NewTrace(tf, workload.TraceConfig{File: "s.jsonl"}); err != nil {
		t.Fatal(err)
	} else if tr.Info.Note != "" {
		t.Errorf("a sorted trace has a note: %q", tr.Info.Note)
	}
}
