package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/record"
)

// TestIdentifyServer reads each engine's info body. The bodies are cut-down answers of the
// engines' documented endpoints: vLLM GET /version, SGLang GET /get_server_info (server
// arguments, scheduler limits, version), TGI GET /info, llama.cpp GET /props, Ollama GET
// /api/version.
func TestIdentifyServer(t *testing.T) {
	cases := []struct {
		name   string
		bodies map[string]string
		want   string // String()
		from   string
	}{
		{"vLLM", map[string]string{"/version": `{"version":"0.6.3.post1"}`}, "vLLM 0.6.3.post1", "GET /version"},
		{"SGLang over its /version", map[string]string{
			"/version":         `{"version":"0.4.1"}`,
			"/get_server_info": `{"model_path":"meta-llama/Llama-3.1-8B-Instruct","tp_size":1,"chunked_prefill_size":8192,"max_running_requests":256,"api_key":"sk-x","version":"0.4.1"}`,
		}, "SGLang 0.4.1 (chunked_prefill_size 8192, max_running_requests 256, tp_size 1)", "GET /get_server_info"},
		{"TGI", map[string]string{"/info": `{"model_id":"bigscience/bloom-560m","version":"2.4.0","max_concurrent_requests":128,"max_batch_total_tokens":16000}`},
			"TGI 2.4.0 (max_batch_total_tokens 16000, max_concurrent_requests 128)", "GET /info"},
		{"llama.cpp", map[string]string{"/props": `{"default_generation_settings":{"n_ctx":4096},"total_slots":4,"build_info":"b4200-abcdef"}`},
			"llama.cpp b4200-abcdef (total_slots 4)", "GET /props"},
		{"Ollama", map[string]string{"/api/version": `{"version":"0.5.7"}`}, "Ollama 0.5.7", "GET /api/version"},
		{"kneecap sim", map[string]string{"/version": `{"version":"kneecap-sim batching","max_num_seqs":32}`},
			"kneecap-sim batching (max_num_seqs 32)", "GET /version"},
		// A catch-all server answering every path with the same page, or JSON of another
		// shape, is no engine.
		{"catch-all", map[string]string{"/version": `<html>hello</html>`, "/info": `{"status":"ok"}`, "/props": `[]`, "/get_server_info": `{"version":"1"}`}, "", ""},
		{"nothing", nil, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bodies := map[string][]byte{}
			for k, v := range tc.bodies {
				bodies[k] = []byte(v)
			}
			info := IdentifyServer(bodies)
			if got := info.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if info != nil && info.From != tc.from {
				t.Errorf("From = %q, want %q", info.From, tc.from)
			}
		})
	}
	// A hostile version string is clipped and loses its control characters.
	long := `{"version":"` + strings.Repeat("9", 500) + `\u001b[31m"}`
	info := IdentifyServer(map[string][]byte{"/version": []byte(long)})
	if n := len([]rune(info.Version)); n > 64 || strings.ContainsRune(info.Version, 0x1b) {
		t.Errorf("version kept %d runes, escape %v", n, strings.ContainsRune(info.Version, 0x1b))
	}
}

// TestRedactServerInfo: secrets in the bodies (SGLang lists its --api-key among its server
// arguments) never reach server_info.json, at any depth; a non-JSON body that mentions one is
// replaced whole.
func TestRedactServerInfo(t *testing.T) {
	doc, err := RedactServerInfo(map[string][]byte{
		"/get_server_info": []byte(`{"model_path":"m","api_key":"sk-secret-1","nested":{"hf_token":"hf_secret2","list":[{"admin_api_key":"secret3"}]},` +
			`"max_running_requests":8,"max_total_num_tokens":65536,"private_key":"secret5","hf_key":"secret6","access_key_id":"secret7",` +
			`"auth":"Bearer secret8","otlp":"https://user:secret9@collector:4317","config":"{\"secret_key\":\"secret10\"}"}`),
		"/props": []byte(`plain text with token=secret4`),
		"/slots": []byte(`{"total_slots":4,"bos_token":"<s>","eos_token":"</s>","eos_token_id":2,"author":"Meta",` +
			`"default_generation_settings":{"next_token":{"has_next_token":true,"n_remain":-1}},` +
			`"token":"secret11","hfToken":"secret12","access_token":"secret13","password":"secret14","Authorization":"secret15"}`),
		"/version": []byte(`{"version":"0.6.3"}`),
		"/info":    []byte(`{"model_id":"m","max_batch_total_tokens":16000,"tokenizer_config":{"x":1}}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"max_total_num_tokens": 65536`, `"max_batch_total_tokens": 16000`, `"tokenizer_config"`, "collector:4317",
		`"bos_token": "\u003cs\u003e"`, `"eos_token": "\u003c/s\u003e"`, `"eos_token_id": 2`, `"has_next_token": true`, `"author": "Meta"`} {
		if !strings.Contains(string(doc), want) {
			t.Errorf("server_info.json lost %s (not a secret):\n%s", want, doc)
		}
	}
	for _, secret := range []string{"sk-secret-1", "hf_secret2", "secret3", "secret4", "secret5", "secret6", "secret7", "secret8", "secret9", "secret10",
		"secret11", "secret12", "secret13", "secret14", "secret15"} {
		if strings.Contains(string(doc), secret) {
			t.Errorf("server_info.json holds %q:\n%s", secret, doc)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	if m["/version"].(map[string]any)["version"] != "0.6.3" || m["/get_server_info"].(map[string]any)["max_running_requests"] != 8.0 {
		t.Errorf("non-secret values lost:\n%s", doc)
	}
}

// TestInfoSecret: server_info.json redaction is keyed on secret-looking names only. Every
// credential name of an engine's info body (SGLang's api_key, hf_token, TGI's auth) is a
// secret; the special tokens of a vocabulary (llama.cpp's /props bos_token, eos_token, its
// slots' next_token), token ids and token counts are not.
func TestInfoSecret(t *testing.T) {
	secret := []string{"api_key", "admin_api_key", "apiKey", "hf_token", "hfToken", "HF-TOKEN", "token", "access_token",
		"accessToken", "id_token", "refresh_token", "auth", "Authorization", "basic_auth", "password", "db_passwd",
		"client_secret", "private_key", "credentials", "cookie", "bearer", "token_secret", "x-token"}
	vocabulary := []string{"bos_token", "eos_token", "pad_token", "unk_token", "next_token", "has_next_token", "eosToken",
		"eos_token_id", "token_id", "stop_token_ids", "max_total_num_tokens", "max_batch_total_tokens", "tokenizer_path",
		"skip_tokenizer_init", "n_tokens", "author", "total_slots", "max_running_requests", "model_path"}
	for _, k := range secret {
		if !infoSecret(k) {
			t.Errorf("infoSecret(%q) = false: a credential's name must be redacted", k)
		}
	}
	for _, k := range vocabulary {
		if infoSecret(k) {
			t.Errorf("infoSecret(%q) = true: not a secret (a vocabulary's token, a count or a setting)", k)
		}
	}
}

// TestTokensPerChunk: SGLang's stream_interval and the simulator's tokens_per_chunk are the
// tokens a server says it streams in one chunk; other engines say nothing (0).
func TestTokensPerChunk(t *testing.T) {
	for _, tc := range []struct {
		info *record.ServerInfo
		want int
	}{
		{&record.ServerInfo{Engine: "SGLang", Settings: map[string]string{"stream_interval": "8"}}, 8},
		{&record.ServerInfo{Engine: SimEngine, Settings: map[string]string{"max_num_seqs": "32", "tokens_per_chunk": "4"}}, 4},
		{&record.ServerInfo{Engine: "vLLM"}, 0},
		{&record.ServerInfo{Engine: "SGLang", Settings: map[string]string{"stream_interval": "x"}}, 0},
		{nil, 0},
	} {
		if got := tc.info.TokensPerChunk(); got != tc.want {
			t.Errorf("%v: TokensPerChunk = %d, want %d", tc.info, got, tc.want)
		}
	}
}

// TestServerMaxModelLen: SGLang's context_length and the simulator's max_model_len (its GET
// /version) are the server's context limit; other engines say nothing (0).
func TestServerMaxModelLen(t *testing.T) {
	sim := IdentifyServer(map[string][]byte{"/version": []byte(`{"version":"kneecap-sim fixed","max_model_len":1000}`)})
	for _, tc := range []struct {
		info *record.ServerInfo
		want int
	}{
		{sim, 1000},
		{&record.ServerInfo{Engine: "SGLang", Settings: map[string]string{"context_length": "32768"}}, 32768},
		{&record.ServerInfo{Engine: "vLLM"}, 0},
		{nil, 0},
	} {
		if got := tc.info.MaxModelLen(); got != tc.want {
			t.Errorf("%v: MaxModelLen = %d, want %d", tc.info, got, tc.want)
		}
	}
}
