package openai

import (
	"strings"
	"testing"
)

// scanSeeds are payloads of real servers' shapes and the edge cases where encoding/json's
// rules (case-insensitive keys, null for ints, duplicate keys, escapes) decide.
var scanSeeds = []string{
	roleChunk(), contentChunk("a"), contentChunk(""), usageChunk(3, 7),
	// Tool calls (progress): arguments, the older function_call, null, empty, another case.
	toolChunk(`{\"a\"`), `{"choices":[{"delta":{"function_call":{"arguments":"x"}}}]}`,
	`{"choices":[{"delta":{"tool_calls":null}}]}`, `{"choices":[{"delta":{"tool_calls":[]}}]}`,
	`{"choices":[{"delta":{"tool_calls":[ ]}}]}`, `{"choices":[{"delta":{"Tool_Calls":[{}],"tool_calls":null}}]}`,
	// Replies (keepReply): escapes, non-ASCII, invalid UTF-8, several answer strings.
	`{"choices":[{"delta":{"content":"say \"ok\"\n\u00e9"}}]}`, `{"choices":[{"delta":{"content":"é ☃ 𝄞"}}]}`,
	"{\"choices\":[{\"delta\":{\"content\":\"a\xff\xfeb\"}}]}", `{"choices":[{"text":"a","delta":{"content":"b"}}]}`,
	`{"choices":[{"delta":{"content":"a"}},{"delta":{"content":"b"}}]}`, `{"choices":[{"text":"\/x\t"}]}`,
	`{"choices":[{"text":"a"},{"text":""}]}`, `{"choices":[{"index":0,"text":"","finish_reason":"length"}]}`,
	`{"choices":[{"delta":{"reasoning":"r"}}],"usage":null}`,
	`{"choices":[{"delta":{"reasoning_content":"r","content":null}}]}`,
	`{"choices":[null,{"delta":null},{"delta":{"content":"x"}}]}`, `{"choices":null}`, `{"choices":[]}`,
	`{"CHOICES":[{"DELTA":{"Content":"x"}}]}`, `{"choices":[{"delta":{"content":"x","content":""}}]}`,
	`{"choices":[{"delta":{"content":"x"},"delta":{}}]}`, `{"choices":[],"choices":[{"text":"a"}]}`,
	`{"usage":{"completion_tokens":5},"usage":{"prompt_tokens":3}}`, `{"usage":{"completion_tokens":null}}`,
	`{"usage":{"completion_tokens":1.0}}`, `{"usage":{"completion_tokens":1e2}}`, `{"usage":{"completion_tokens":"3"}}`,
	`{"usage":{"completion_tokens":-1}}`, `{"usage":{"completion_tokens":99999999999999999999}}`,
	`{"usage":{"prompt_tokens":4,"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":2}}}`,
	`{"error":"plain string"}`, `{"error":null,"choices":[{"text":"a"}]}`, `{"error":{"message":"m"}}`,
	`{"object":"error","message":"m","code":500}`, `{"object":"chat.completion.chunk"}`,
	`{"ch\u006fices":[{"text":"a"}]}`, `{"choices":[{"text":"\u00e9\n"}]}`, "{\"choices\":[{\"text\":\"é\"}]}",
	"{\"choſces\":[]}", `{"choices":5}`, `{"choices":[5]}`, `{"choices":[{"delta":5}]}`,
	`{"usage":5}`, `[DONE]`, `null`, `[]`, `"x"`, `{}`, ` { } `, `{"a":[1,2,{"b":[true,false,null]}],"c":-0.5e+3}`,
	`{"choices":[{"text":"a"}]}x`, `{"choices":[{"text":"a"}],}`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`,
	reasoningChunk("r"), usageDetailsChunk(3, 9, 2), `{"usage":{"prompt_tokens":3}}`, `{"usage":{}}`,
	`{"usage":{"completion_tokens":9,"completion_tokens_details":null}}`,
	`{"usage":{"completion_tokens_details":{"reasoning_tokens":null,"accepted_prediction_tokens":0}}}`,
	`{"usage":{"completion_tokens_details":5}}`, `{"usage":{"completion_tokens_details":{"reasoning_tokens":"3"}}}`,
	`{"usage":{"completion_tokens_details":{"reasoning_tokens":1.5}}}`,
	`{"usage":{"completion_tokens_details":{"reasoning_tokens":1,"reasoning_tokens":2}}}`,
	`{"usage":{"completion_tokens_details":{},"completion_tokens_details":{"reasoning_tokens":2}}}`,
	`{"usage":{"prompt_tokens":9,"prompt_tokens_details":{"cached_tokens":8}}}`, `{"usage":{"prompt_tokens_details":null}}`,
	`{"usage":{"prompt_tokens_details":{"cached_tokens":"8"}}}`, `{"usage":{"prompt_tokens_details":[1]}}`,
	`{"usage":{"Prompt_Tokens_Details":{"CACHED_TOKENS":3},"prompt_tokens_details":{"cached_tokens":4}}}`,
	`{"usage":{"prompt_tokens_details":{"cached_tokens":1,"cached_tokens":2}}}`,
	`{"usage":{"Completion_Tokens_Details":{"REASONING_TOKENS":4},"completion_tokens":-7}}`,
	`{"choices":[{"delta":{"reasoning":"r","content":"c"}}]}`, `{"choices":[{"delta":{"reasoning":"r"}},{"text":"t"}]}`,
	`{"choices":[{"delta":{"reasoning_content":"","reasoning":null,"content":""}}]}`,
	"{\"a\":\"\x01\"}", `{"a":tru}`, `{"a"}`, `{`, ``, `{"a":[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]}`,
}

// TestScanChunkMatchesEncodingJSON checks the fast path against encoding/json on the seeds:
// whenever scanChunk accepts a payload, decodeSlow accepts it and says the same.
func TestScanChunkMatchesEncodingJSON(t *testing.T) {
	fast := 0
	for _, s := range scanSeeds {
		if checkScan(t, []byte(s)) {
			fast++
		}
	}
	// The common shapes must take the fast path, or the optimisation is gone.
	for _, s := range []string{roleChunk(), contentChunk("a"), usageChunk(3, 7), `{"choices":[{"text":"a"}]}`,
		reasoningChunk("r"), `{"choices":[{"delta":{"reasoning":"r"}}]}`, usageDetailsChunk(3, 9, 2)} {
		if _, ok := scanChunk([]byte(s)); !ok {
			t.Errorf("scanChunk declined the common payload %s", s)
		}
	}
	if fast < len(scanSeeds)/3 {
		t.Errorf("only %d of %d seeds took the fast path", fast, len(scanSeeds))
	}
}

// checkScan compares scanChunk with decodeSlow on b and reports whether the fast path took it.
func checkScan(t *testing.T, b []byte) bool {
	t.Helper()
	got, ok := scanChunk(b)
	var d chunkDecoder
	want, err := d.decodeSlow(b)
	if !ok {
		return false
	}
	if err != nil {
		t.Errorf("%q: scanChunk accepted %+v, encoding/json failed: %v", b, got, err)
	} else if sansReply(got) != sansReply(want) {
		t.Errorf("%q: scanChunk %+v, encoding/json %+v", b, got, want)
	} else if got.answer {
		// The reply kept from the scan is what encoding/json decodes of the event.
		var fast, slow strings.Builder
		keepReply(&fast, b, &got)
		appendReply(&slow, b)
		if fast.String() != slow.String() {
			t.Errorf("%q: reply %q from the scan, %q from encoding/json", b, fast.String(), slow.String())
		}
	}
	return true
}

// decoded is what both decoders must agree on: a chunkResult without the raw reply the
// scanner adds.
type decoded struct {
	answer, reasoning, progress bool
	usage                       usageCounts
}

// sansReply is r without the raw reply.
func sansReply(r chunkResult) decoded { return decoded{r.answer, r.reasoning, r.progress, r.usage} }

// FuzzScanChunk is the differential fuzz test of the fast path against encoding/json.
func FuzzScanChunk(f *testing.F) {
	for _, s := range scanSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkScan(t, b) })
}
