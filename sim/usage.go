package sim

// usageOut is the OpenAI usage object.
type usageOut struct {
	PromptTokens            int64              `json:"prompt_tokens"`
	TotalTokens             int64              `json:"total_tokens"`
	CompletionTokens        int64              `json:"completion_tokens"`
	CompletionTokensDetails *completionDetails `json:"completion_tokens_details,omitempty"`
	PromptTokensDetails     *promptDetails     `json:"prompt_tokens_details,omitempty"`
}

// promptDetails is usage.prompt_tokens_details: the prompt tokens found in the prefix cache
// (OpenAI's and vLLM's field).
type promptDetails struct {
	CachedTokens int64 `json:"cached_tokens"`
}

// completionDetails is usage.completion_tokens_details: the reasoning tokens among the
// completion tokens.
type completionDetails struct {
	ReasoningTokens int64 `json:"reasoning_tokens"`
}

// reportedUsage is the usage the server reports for a request of p that generated completion
// tokens: the truth, except that faults.usage_prompt_tokens and faults.usage_completion_tokens
// replace their counts when set (total_tokens is then the sum of the reported two), and
// faults.omit_usage reports none (nil). The content streamed stays true either way. With
// reasoning_tokens set, a chat request's usage has completion_tokens_details.reasoning_tokens,
// always the truth: completion_tokens counts reasoning and answer tokens alike. With
// prefix caching (batching mode) it has prompt_tokens_details.cached_tokens, the truth too.
func (c *Config) reportedUsage(p *plan, completion int) *usageOut {
	f := c.Faults
	if f.OmitUsage {
		return nil
	}
	u := usageOut{PromptTokens: int64(p.prompt), CompletionTokens: int64(completion)}
	if f.UsagePromptTokens != nil {
		u.PromptTokens = *f.UsagePromptTokens
	}
	if f.UsageCompletionTokens != nil {
		u.CompletionTokens = *f.UsageCompletionTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if c.ReasoningTokens > 0 && p.kind == apiChat {
		u.CompletionTokensDetails = &completionDetails{ReasoningTokens: int64(p.reasoning)}
	}
	if hit := p.cachedTokens(); hit >= 0 {
		u.PromptTokensDetails = &promptDetails{CachedTokens: hit}
	}
	return &u
}
