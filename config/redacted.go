package config

import "github.com/kneecap/kneecap/redact"

// Redacted returns a copy safe to write to config.yaml: URLs (target.url, server_metrics.url,
// gpu_metrics.urls) lose their userinfo and secret-looking query parameters, extra_body
// values under secret-looking keys (api_key, authorization, token, secret, password, …) are
// replaced by "REDACTED", at any depth, and so are the values of secret-looking headers
// (redact.SecretHeader).
func (c Config) Redacted() Config {
	c.Target.URL = redact.URL(c.Target.URL)
	c.ServerMetrics.URL = redact.URL(c.ServerMetrics.URL)
	if c.GPUMetrics.URLs != nil {
		urls := make([]string, len(c.GPUMetrics.URLs))
		for i, u := range c.GPUMetrics.URLs {
			urls[i] = redact.URL(u)
		}
		c.GPUMetrics.URLs = urls
	}
	if c.Target.ExtraBody != nil {
		c.Target.ExtraBody = redact.Tree(c.Target.ExtraBody, redact.SecretKey, nil).(map[string]any)
	}
	c.Target.Headers = redactHeaders(c.Target.Headers)
	if c.Sweep.RecordChunks != nil {
		v := *c.Sweep.RecordChunks
		c.Sweep.RecordChunks = &v
	}
	return c
}

// Secrets returns the secrets of c for redact.NewSecrets, besides the API key: the password
// (or the lone user name) of target.url, server_metrics.url and gpu_metrics.urls, their
// secret-looking query values, the string values of extra_body under secret-looking keys
// (sent in every request body, so a server may echo them), and the values of secret-looking
// headers in every form redact.HeaderSecrets gives.
func (c Config) Secrets() []string {
	out := redact.URLSecrets(c.Target.URL)
	out = append(out, redact.URLSecrets(c.ServerMetrics.URL)...)
	for _, u := range c.GPUMetrics.URLs {
		out = append(out, redact.URLSecrets(u)...)
	}
	if c.Target.ExtraBody != nil {
		out = append(out, redact.TreeSecrets(c.Target.ExtraBody, redact.SecretKey)...)
	}
	for name, v := range c.Target.Headers {
		if redact.SecretHeader(name) {
			out = append(out, redact.HeaderSecrets(v)...)
		}
	}
	return out
}

// redactHeaders returns a copy of h with the values of secret-looking names replaced by
// redact.Value (nil for nil).
func redactHeaders(h map[string]string) map[string]string {
	if h == nil {
		return nil
	}
	out := make(map[string]string, len(h))
	for name, v := range h {
		if redact.SecretHeader(name) {
			v = redact.Value
		}
		out[name] = v
	}
	return out
}
