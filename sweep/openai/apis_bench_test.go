package openai

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// BenchmarkEventDecode measures the decoders of the Responses and Messages APIs on their
// answer deltas (the per-chunk path of those APIs; chat's is BenchmarkDecodeChunk).
func BenchmarkEventDecode(b *testing.B) {
	for _, bc := range []struct {
		name    string
		payload []byte
		dec     func() eventDecoder
		start   string
	}{
		{"responses", []byte(`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_67c9fdcf37fc8190ba82116e33fb28c507b8b0ad4e5eb654","output_index":0,"content_index":0,"delta":"Hi"}`),
			func() eventDecoder { return new(responsesDecoder) }, `{"type":"response.created"}`},
		{"messages", []byte(`{"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hello"}}`),
			func() eventDecoder { return new(messagesDecoder) }, `{"type":"message_start"}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			d := bc.dec()
			if _, err := d.decode([]byte(bc.start)); err != nil {
				b.Fatal(err)
			}
			if bc.name == "messages" {
				if _, err := d.decode([]byte(`{"type":"content_block_start"}`)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if r, err := d.decode(bc.payload); err != nil || !r.answer {
					b.Fatal(r, err)
				}
			}
		})
	}
}

// BenchmarkClientEventStream is BenchmarkClientStream's "chunks" case for the Responses and
// Messages APIs: one request an iteration streaming eventChunks answer deltas as the API names
// them (an event: line before each data line), then the usage and the terminal event.
// Reports ns/chunk and allocs/chunk (process-wide, server included).
func BenchmarkClientEventStream(b *testing.B) {
	const eventChunks = 1000
	var resp, msgs strings.Builder
	resp.WriteString("event: response.created\ndata: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_1\",\"status\":\"in_progress\"}}\n\n")
	msgs.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":10,\"output_tokens\":1}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range eventChunks {
		fmt.Fprintf(&resp, "event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"sequence_number\":%d,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"tok\"}\n\n", i+1)
		msgs.WriteString("event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"tok\"}}\n\n")
	}
	fmt.Fprintf(&resp, "event: response.completed\ndata: {\"type\":\"response.completed\",\"sequence_number\":%d,\"response\":{\"id\":\"resp_1\",\"status\":\"completed\",\"usage\":{\"input_tokens\":10,\"input_tokens_details\":{\"cached_tokens\":0},\"output_tokens\":%d,\"output_tokens_details\":{\"reasoning_tokens\":0},\"total_tokens\":%d}}}\n\n",
		eventChunks+1, eventChunks, eventChunks+10)
	fmt.Fprintf(&msgs, "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"+
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},\"usage\":{\"output_tokens\":%d}}\n\n"+
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", eventChunks)
	for _, bc := range []struct {
		api  record.API
		body string
	}{{record.APIResponses, resp.String()}, {record.APIMessages, msgs.String()}} {
		b.Run(string(bc.api), func(b *testing.B) {
			c := newClient(b, serveBody(b, bc.body).URL, func(o *Options) { o.API = bc.api })
			req := record.Request{Prompt: strings.Repeat("x ", 10), PromptTokens: 10, MaxTokens: eventChunks}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				var rec record.Record
				c.Do(context.Background(), &req, &rec)
				if rec.Status != record.StatusOK || rec.OutputTokens != eventChunks || len(rec.Chunks) != eventChunks {
					b.Fatalf("%s %s", rec.Status, rec.Error)
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			n := float64(b.N) * eventChunks
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/chunk")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/n, "allocs/chunk")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/n, "B/chunk")
		})
	}
}
