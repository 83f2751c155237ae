package config

import "github.com/kneecap/kneecap/redact"

// Redacted returns a copy safe to write to config.yaml: URLs lose their userinfo and
// secret-looking query parameters, and extra_body values under secret-looking keys (api_key,
// authorization, token, secret, password, …) are replaced by "REDACTED", at any depth.
func (c Config) Redacted() Config {
	c.Target.URL = redact.URL(c.Target.URL)
	c.ServerMetrics.URL = redact.URL(c.ServerMetrics.URL)
	if c.Target.ExtraBody != nil {
		c.Target.ExtraBody = redact.Tree(c.Target.ExtraBody, redact.SecretKey, nil).(map[string]any)
	}
	if c.Sweep.RecordChunks != nil {
		v := *c.Sweep.RecordChunks
		c.Sweep.RecordChunks = &v
	}
	return c
}
