package openai

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/kneecap/kneecap/sweep"
)

// ServerInfoTimeout bounds the info probe: it only describes the server, so a server slow to
// answer is left undescribed rather than delaying the sweep.
const ServerInfoTimeout = 3 * time.Second

// ServerInfo GETs sweep.ServerInfoPaths at the server's root (the base URL without its /v1),
// in parallel, with the client's TLS settings and API key, and returns the bodies of those
// that answered 200 with at most sweep.MaxServerInfoBody bytes; sweep.IdentifyServer reads
// them. Failures are not errors: most servers answer few of the paths.
func (c *Client) ServerInfo(ctx context.Context) map[string][]byte {
	root, err := url.Parse(strings.TrimRight(c.opts.BaseURL, "/"))
	if err != nil {
		return nil
	}
	root.Path = strings.TrimSuffix(root.Path, "/v1")
	ctx, cancel := context.WithTimeout(ctx, ServerInfoTimeout)
	defer cancel()
	hc := &http.Client{Transport: c.transport}
	var (
		mu  sync.Mutex
		out = map[string][]byte{}
		wg  sync.WaitGroup
	)
	for _, path := range sweep.ServerInfoPaths {
		wg.Go(func() {
			u := *root
			u.Path = strings.TrimRight(u.Path, "/") + path
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			if err != nil {
				return
			}
			if c.opts.APIKey != "" {
				req.Header.Set("Authorization", "Bearer "+c.opts.APIKey)
			}
			req.Header.Set("Accept", "application/json")
			resp, err := hc.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(io.LimitReader(resp.Body, sweep.MaxServerInfoBody+1))
			if err != nil || resp.StatusCode != http.StatusOK || len(b) > sweep.MaxServerInfoBody {
				return
			}
			mu.Lock()
			out[path] = b
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}
