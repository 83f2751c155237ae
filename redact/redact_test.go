package redact

import "testing"

func TestSecretKey(t *testing.T) {
	for k, want := range map[string]bool{
		"api_key": true, "X-API-Key": true, "apiKey": true, "Authorization": true, "token": true,
		"auth_token": true, "access_token": true, "accessToken": true, "client_secret": true,
		"password": true, "max_tokens": false, "min_tokens": false, "stop_token_ids": false,
		"ignore_eos": false, "top_k": false, "max_completion_tokens": false,
	} {
		if got := SecretKey(k); got != want {
			t.Errorf("SecretKey(%q) = %v, want %v", k, got, want)
		}
	}
}
