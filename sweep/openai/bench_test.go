package openai

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"github.com/kneecap/kneecap/sweep"
)

// BenchmarkClientStream measures the client's per-chunk path over loopback: one request per
// iteration streaming chunksPerReq content chunks, pre-rendered so the server adds a constant
// per-request cost. Reports ns/chunk and allocs/chunk (process-wide, server included).
func BenchmarkClientStream(b *testing.B) {
	const chunksPerReq = 1000
	var body bytes.Buffer
	body.WriteString("data: " + roleChunk() + "\n\n")
	for range chunksPerReq {
		body.WriteString("data: " + contentChunk("tok") + "\n\n")
	}
	body.WriteString("data: " + usageChunk(10, chunksPerReq) + "\n\ndata: [DONE]\n\n")
	payload := body.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(payload)
	}))
	defer srv.Close()
	for _, record := range []bool{true, false} {
		name := "chunks"
		if !record {
			name = "itl_summary"
		}
		b.Run(name, func(b *testing.B) {
			c := newClient(b, srv.URL, func(o *Options) { o.RecordChunks = record })
			req := sweep.Request{Prompt: "x", PromptTokens: 1, MaxTokens: chunksPerReq}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				var rec sweep.Record
				c.Do(context.Background(), &req, &rec)
				if rec.Status != sweep.StatusOK || rec.OutputTokens != chunksPerReq {
					b.Fatalf("%s %s", rec.Status, rec.Error)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			n := float64(b.N) * chunksPerReq
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/chunk")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/chunk")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/chunk")
		})
	}
}

// BenchmarkDecodeChunk measures the adapter's own decoding of one chat chunk.
func BenchmarkDecodeChunk(b *testing.B) {
	line := []byte(contentChunk("tok"))
	var d chunkDecoder
	b.ReportAllocs()
	for b.Loop() {
		if r, err := d.decode(line); err != nil || !r.content {
			b.Fatal(err)
		}
	}
}
