package openai

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kneecap/kneecap/redact"
	"github.com/kneecap/kneecap/server"
)

// ServerInfoTimeout bounds the info probe: it only describes the server, so a server slow to
// answer is left undescribed rather than delaying the sweep.
const ServerInfoTimeout = 3 * time.Second

// ServerInfo GETs server.ServerInfoPaths at the server's root (the base URL without its /v1),
// in parallel, with the client's TLS settings, and returns the bodies of those that answered
// 200 with at most server.MaxServerInfoBody bytes; server.IdentifyServer reads them. Options.Header
// goes with every probe, but the API key and the secret headers (redact.SecretHeader) only to
// a path that refused the request without them (401 or 403): the root's other paths may be
// other services behind a path-routed gateway. Redirects are not followed (a redirect to
// another port of the same host would receive the key), and the credentials are removed from
// every body. Failures are not errors: most servers answer few of the paths.
func (c *Client) ServerInfo(ctx context.Context) map[string][]byte {
	root, err := url.Parse(strings.TrimRight(c.opts.BaseURL, "/"))
	if err != nil {
		return nil
	}
	root.Path = strings.TrimSuffix(root.Path, "/v1")
	ctx, cancel := context.WithTimeout(ctx, ServerInfoTimeout)
	defer cancel()
	hc := &http.Client{
		Transport:     c.rt,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	get := func(path string, withKey bool) (int, []byte) {
		u := *root
		u.Path = strings.TrimRight(u.Path, "/") + path
		reqCtx := ctx
		if !withKey {
			reqCtx = withoutSecretHeaders(ctx)
		}
		req, err := http.NewRequestWithContext(reqCtx, http.MethodGet, u.String(), nil)
		if err != nil {
			return 0, nil
		}
		if withKey {
			c.authorize(req)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, server.MaxServerInfoBody+1))
		if err != nil || len(b) > server.MaxServerInfoBody {
			return 0, nil
		}
		return resp.StatusCode, b
	}
	var (
		mu  sync.Mutex
		out = map[string][]byte{}
		wg  sync.WaitGroup
	)
	for _, path := range server.ServerInfoPaths {
		wg.Go(func() {
			code, b := get(path, false)
			if (code == http.StatusUnauthorized || code == http.StatusForbidden) && c.withheld() {
				code, b = get(path, true)
			}
			if code != http.StatusOK {
				return
			}
			for _, cred := range c.credentials {
				b = bytes.ReplaceAll(b, []byte(cred), []byte(redact.Value))
			}
			mu.Lock()
			out[path] = b
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// withheld reports whether the root's probes (ServerInfo, Tokenize) first go without
// credentials the client holds: the API key or a secret header.
func (c *Client) withheld() bool { return c.opts.APIKey != "" || secretHeaders(c.opts.Header) }
