package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// A 2xx answer to a stream request that is no event stream says why, instead of ending as a
// stream without [DONE] (DESIGN §7, class bad_chunk): a compressed body, which kneecap
// cannot read chunk by chunk (it asks for identity), or one whole JSON body (a server that
// ignores stream=true).

// errNotStream is the error of a 2xx answer that is no event stream (or, for embeddings, no
// JSON body kneecap can read).
var errNotStream = errors.New("openai: not a stream")

// identity is the Accept-Encoding of every stream and embeddings request: token timing needs
// the bytes as the server writes them (the transport's DisableCompression alone sends no
// Accept-Encoding, which lets a server choose any coding).
var identity = []string{"identity"}

// encodedBody returns errNotStream for an answer whose body has a content coding (gzip,
// br, …): its bytes are compressed, whatever was asked.
func encodedBody(resp *http.Response) error {
	enc := strings.TrimSpace(resp.Header.Get("Content-Encoding"))
	if enc == "" || strings.EqualFold(enc, "identity") {
		return nil
	}
	return fmt.Errorf("%w: the server sent %s-compressed bytes (Content-Encoding); kneecap asks for identity, as token timing needs the chunks as they are written: turn compression off for this endpoint (a proxy's gzip?)",
		errNotStream, headerWord(enc))
}

// notStream is the error of a body that ended before any data line when it was not an event
// stream: one JSON body (its Content-Type application/json, or its text one JSON object), or
// a body of another type; nil otherwise (an empty or comment-only event stream ends without
// [DONE] as before).
func (b *sseBody) notStream() error {
	if b.sawData || len(b.acc) == 0 {
		return nil
	}
	media := strings.ToLower(strings.TrimSpace(strings.Split(b.ctype, ";")[0]))
	switch {
	case media == "application/json" || b.acc[0] == '{' && json.Valid(b.acc):
		return fmt.Errorf("%w: the server answered with one JSON body (Content-Type %s), not a stream: does it support stream=true? %q",
			errNotStream, headerWord(media), truncate(b.acc, 120))
	case media != "" && media != "text/event-stream":
		return fmt.Errorf("%w: the server answered with a body of Content-Type %s, not text/event-stream, and no data line: %q",
			errNotStream, headerWord(media), truncate(b.acc, 120))
	}
	return nil
}

// headerWord quotes a header value the server sent for a message: at most 40 bytes, quoted
// when it holds anything but letters, digits and -/+.
func headerWord(v string) string {
	if v == "" {
		return "(none)"
	}
	if len(v) > 40 {
		v = v[:40]
	}
	for _, r := range v {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-/+.", r)) {
			return strconv.Quote(v)
		}
	}
	return v
}
