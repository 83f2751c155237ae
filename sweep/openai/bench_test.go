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
// per-request cost. Reports ns/chunk and allocs/chunk (process-wide, server included). The
// "reasoning" case streams half of the chunks as delta.reasoning_content first, as a
// reasoning model does, with reasoning_tokens in the usage. The "timeouts" case is "chunks"
// with the default ttft_timeout and stall_timeout on (the others have request_timeout only).
func BenchmarkClientStream(b *testing.B) {
	const chunksPerReq = 1000
	stream := func(reasoning int) []byte {
		var body bytes.Buffer
		body.WriteString("data: " + roleChunk() + "\n\n")
		for i := range chunksPerReq {
			if i < reasoning {
				body.WriteString("data: " + reasoningChunk("tok") + "\n\n")
			} else {
				body.WriteString("data: " + contentChunk("tok") + "\n\n")
			}
		}
		body.WriteString("data: " + usageDetailsChunk(10, chunksPerReq, reasoning) + "\n\ndata: [DONE]\n\n")
		return body.Bytes()
	}
	serve := func(payload []byte) *httptest.Server {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			w.Write(payload)
		}))
		b.Cleanup(srv.Close)
		return srv
	}
	plain, reasoned := serve(stream(0)), serve(stream(chunksPerReq/2))
	for _, bc := range []struct {
		name                        string
		record, reasoning, timeouts bool
	}{{"chunks", true, false, false}, {"itl_summary", false, false, false}, {"reasoning", true, true, false}, {"timeouts", true, false, true}} {
		b.Run(bc.name, func(b *testing.B) {
			srv := plain
			if bc.reasoning {
				srv = reasoned
			}
			c := newClient(b, srv.URL, func(o *Options) {
				o.RecordChunks = bc.record
				if bc.timeouts {
					def := DefaultOptions()
					o.TTFTTimeout, o.StallTimeout = def.TTFTTimeout, def.StallTimeout
				}
			})
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

// BenchmarkDecodeChunk measures the adapter's own decoding of one chat chunk: answer
// content, reasoning content, and the final usage chunk with completion_tokens_details.
func BenchmarkDecodeChunk(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"content", contentChunk("tok")},
		{"reasoning", reasoningChunk("tok")},
		{"usage", usageDetailsChunk(10, 20, 5)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			line := []byte(bc.line)
			var d chunkDecoder
			b.ReportAllocs()
			for b.Loop() {
				if _, err := d.decode(line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
