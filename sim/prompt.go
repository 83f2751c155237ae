package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
)

// promptTokens is the one rule that counts a request's prompt tokens, for usage.prompt_tokens,
// POST /tokenize, the context-limit check, the KV cache and prefill time alike: the
// configured Tokenizer over every message content (chat; the text parts of array contents) or
// the prompt (completions; a token-id array counts its length), plus chat_template_tokens
// for a chat request.
func (c *Config) promptTokens(g *genRequest, kind apiKind) (int, error) {
	n := 0
	err := g.walkPrompt(kind, func(text string) { n += c.Tokenizer.Count(text) }, func(ids []int) { n += len(ids) })
	if err != nil {
		return 0, err
	}
	if kind == apiChat {
		n += c.ChatTemplateTokens
	}
	return n, nil
}

// promptIDs returns the token ids of the prompt promptTokens counts, in the same order of
// rules: chat_template_tokens template ids first (chat), then each text's ids (see
// Tokenizer.appendIDs) or the ids given. len(result) equals promptTokens.
func (c *Config) promptIDs(g *genRequest, kind apiKind) ([]int, error) {
	var ids []int
	if kind == apiChat {
		for i := range c.ChatTemplateTokens {
			ids = append(ids, tokenID("<|template_"+strconv.Itoa(i)+"|>"))
		}
	}
	err := g.walkPrompt(kind, func(text string) { ids = c.Tokenizer.appendIDs(ids, text) }, func(given []int) { ids = append(ids, given...) })
	if err != nil {
		return nil, err
	}
	return ids, nil
}

// contextLimit is the context limit in tokens a request's prompt + max_tokens must fit:
// max_model_len, and in batching mode the KV capacity when smaller; 0 = unlimited.
func (c *Config) contextLimit() int {
	limit := c.MaxModelLen
	if c.Mode == modeBatching && c.KVCacheTokens > 0 && (limit == 0 || c.KVCacheTokens < limit) {
		limit = c.KVCacheTokens
	}
	return limit
}

// walkPrompt calls text with every text of the request's prompt (chat: each message's
// content, a string or the "text" fields of an array of parts; completions: the prompt
// string or the one string of an array) and ids with a prompt given as token ids.
func (g *genRequest) walkPrompt(kind apiKind, text func(string), ids func([]int)) error {
	if kind == apiChat {
		if len(g.Messages) == 0 {
			return errors.New("messages: must not be empty")
		}
		for i, m := range g.Messages {
			if err := walkContent(m.Content, text); err != nil {
				return fmt.Errorf("messages[%d].content: %w", i, err)
			}
		}
		return nil
	}
	raw := bytes.TrimSpace(g.Prompt)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return errors.New("prompt: required")
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		text(s)
		return nil
	}
	var ss []string
	if err := json.Unmarshal(raw, &ss); err == nil {
		if len(ss) != 1 {
			return fmt.Errorf("prompt: %d prompts in one request are not supported", len(ss))
		}
		text(ss[0])
		return nil
	}
	var given []int
	if err := json.Unmarshal(raw, &given); err == nil {
		ids(given)
		return nil
	}
	return errors.New("prompt: must be a string, a one-element array of strings, or an array of token ids")
}

// walkContent calls text with a message content: a string, or each "text" field of an array
// of parts.
func walkContent(raw json.RawMessage, text func(string)) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		text(s)
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return errors.New("must be a string or an array of content parts")
	}
	for _, p := range parts {
		text(p.Text)
	}
	return nil
}
