package openai

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/kneecap/kneecap/record"
)

// chatMessages returns the messages of req: its history (a session's earlier turns), then
// its prompt as the user message.
func chatMessages(req *record.Request) []goopenai.ChatCompletionMessage {
	user := goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: req.Prompt}
	if len(req.History) == 0 {
		return []goopenai.ChatCompletionMessage{user}
	}
	msgs := make([]goopenai.ChatCompletionMessage, 0, len(req.History)+1)
	for _, m := range req.History {
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: m.Role, Content: m.Content})
	}
	return append(msgs, user)
}

// replyEvent is the answer content of a stream event: delta.content (chat) or text
// (completions) of each choice; reasoning content is not part of a reply.
type replyEvent struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
}

// appendReply adds the answer content of the event line, which the scanner (or the decoder)
// has accepted as an answer chunk, to b. Only requests that keep their reply pay for it; the
// events the scanner read with one answer string take appendContent's way, this decodes the
// others (several choices, or what the scanner declined) whole.
func appendReply(b *strings.Builder, line []byte) {
	var ev replyEvent
	if json.Unmarshal(line, &ev) != nil {
		return
	}
	for i := range ev.Choices {
		b.WriteString(ev.Choices[i].Delta.Content)
		b.WriteString(ev.Choices[i].Text)
	}
}

// keepReply adds the answer content of the answer chunk line, scanned as res, to b: the
// string the scanner found, as it is when it has no escape and is valid UTF-8 (what
// encoding/json would give), else unescaped alone; appendReply otherwise.
func keepReply(b *strings.Builder, line []byte, res *chunkResult) {
	if res.replies != 1 {
		appendReply(b, line)
		return
	}
	raw := res.reply
	if s := raw[1 : len(raw)-1]; bytes.IndexByte(s, '\\') < 0 && utf8.Valid(s) {
		b.Write(s)
		return
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		b.WriteString(s)
	}
}
