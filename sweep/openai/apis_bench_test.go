package openai

import "testing"

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
