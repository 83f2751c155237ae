package sim

import (
	"encoding/json"
	"net/http"
)

// tokenizeRequest is vLLM's POST /tokenize body: the completions form {"model", "prompt"} or
// the chat form {"model", "messages", "add_generation_prompt"}. The flags of the chat form are
// accepted and change nothing: the simulated chat template is chat_template_tokens tokens
// whichever they say, as every chat request counts them.
type tokenizeRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
	AddSpecialTokens    *bool           `json:"add_special_tokens"`
}

// tokenizeResponse is vLLM's answer: the number of tokens, the context limit and the ids.
type tokenizeResponse struct {
	Count       int   `json:"count"`
	MaxModelLen int   `json:"max_model_len"`
	Tokens      []int `json:"tokens"`
}

// tokenize serves POST /tokenize as vLLM does. The count is promptTokens' for the same
// prompt, so a prompt's /tokenize count equals the usage.prompt_tokens a request with it
// reports; max_model_len is the context limit requests are checked against (0 = unlimited).
func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var tr tokenizeRequest
	if !decodeBody(w, r, &tr) || !s.servesModel(w, tr.Model) {
		return
	}
	kind := apiCompletions
	if tr.Messages != nil {
		kind = apiChat
	}
	g := genRequest{Messages: tr.Messages, Prompt: tr.Prompt}
	ids, err := s.cfg.promptIDs(&g, kind)
	if err != nil {
		badRequest(w, "%v", err)
		return
	}
	if ids == nil {
		ids = []int{}
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(tokenizeResponse{Count: len(ids), MaxModelLen: s.cfg.contextLimit(), Tokens: ids})
}
