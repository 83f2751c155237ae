package config

// Origin says where key (a dotted path such as "target.api_key_env") was set: the flag that
// set it ("--api-key-env"), the file's "FILE:LINE", or "" when it keeps its default.
func (c *Config) Origin(key string) string {
	if !c.given(key) {
		return ""
	}
	return c.where(key)
}
