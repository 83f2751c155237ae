package openai

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// BenchmarkClientStream measures the client's per-chunk path over loopback: one request per
// iteration streaming chunksPerReq content chunks, pre-rendered so the server adds a constant
// per-request cost. Reports ns/chunk and allocs/chunk (process-wide, server included). The
// "reasoning" case streams half of the chunks as delta.reasoning_content first, as a
// reasoning model does, with reasoning_tokens in the usage (every case's usage carries
// prompt_tokens_details.cached_tokens too). The "long" case streams
// longChunks chunks, more than a record keeps the offsets of (the rest go to its tail). The
// "timeouts" case is "chunks" with the default ttft_timeout and stall_timeout on (the others
// have request_timeout only).
func BenchmarkClientStream(b *testing.B) {
	const chunksPerReq, longChunks = 1000, 3 * 4096
	stream := func(n, reasoning int) []byte {
		var body bytes.Buffer
		body.WriteString("data: " + roleChunk() + "\n\n")
		for i := range n {
			if i < reasoning {
				body.WriteString("data: " + reasoningChunk("tok") + "\n\n")
			} else {
				body.WriteString("data: " + contentChunk("tok") + "\n\n")
			}
		}
		body.WriteString("data: " + usageDetailsChunk(10, n, reasoning) + "\n\ndata: [DONE]\n\n")
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
	plain, reasoned := serve(stream(chunksPerReq, 0)), serve(stream(chunksPerReq, chunksPerReq/2))
	long := serve(stream(longChunks, 0))
	for _, bc := range []struct {
		name             string
		srv              *httptest.Server
		chunks           int
		record, timeouts bool
	}{
		{"chunks", plain, chunksPerReq, true, false}, {"itl_summary", plain, chunksPerReq, false, false},
		{"reasoning", reasoned, chunksPerReq, true, false}, {"long", long, longChunks, true, false},
		{"timeouts", plain, chunksPerReq, true, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c := newClient(b, bc.srv.URL, func(o *Options) {
				o.RecordChunks = bc.record
				if bc.timeouts {
					def := DefaultOptions()
					o.TTFTTimeout, o.StallTimeout = def.TTFTTimeout, def.StallTimeout
				}
			})
			req := record.Request{Prompt: "x", PromptTokens: 1, MaxTokens: bc.chunks}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				var rec record.Record
				c.Do(context.Background(), &req, &rec)
				if rec.Status != record.StatusOK || rec.OutputTokens != bc.chunks || rec.CachedTokens == nil {
					b.Fatalf("%s %s", rec.Status, rec.Error)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			n := float64(b.N) * float64(bc.chunks)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/chunk")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/chunk")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/chunk")
		})
	}
}

// BenchmarkDecodeChunk measures the adapter's own decoding of one chat chunk: answer
// content, reasoning content, the final usage chunk with prompt_tokens_details and
// completion_tokens_details, and a part of a tool call's arguments.
func BenchmarkDecodeChunk(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"content", contentChunk("tok")},
		{"reasoning", reasoningChunk("tok")},
		{"usage", usageDetailsChunk(10, 20, 5)},
		{"tool", toolChunk(`{\"city\":`)},
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

// BenchmarkKeepReply measures what keeping the reply (Request.KeepReply) adds to one answer
// chunk: appending its content to the reply, plain and with escapes (the scan, which the
// chunk gets anyway, included: BenchmarkDecodeChunk/content alone).
func BenchmarkKeepReply(b *testing.B) {
	for _, bc := range []struct{ name, line string }{
		{"plain", contentChunk("tok")},
		{"escaped", contentChunk(`say \"ok\"\n`)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			line := []byte(bc.line)
			var sb strings.Builder
			b.ReportAllocs()
			for b.Loop() {
				if sb.Len() > 1<<16 {
					sb.Reset()
				}
				res, _ := scanChunk(line)
				keepReply(&sb, line, &res)
			}
		})
	}
}
