package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kneecap/kneecap/redact"
)

// metricsOff is the server_metrics.url (--server-metrics-url) that disables scraping, and
// with it the probe of /metrics at the target's host.
const metricsOff = "off"

// metricsProbeTimeout bounds the probe of /metrics.
const metricsProbeTimeout = 2 * time.Second

// defaultMetricsURL is /metrics at the host of the base URL endpoint, where vLLM, SGLang,
// llama.cpp (--metrics) and TGI serve their Prometheus metrics: the scheme and host kept, the
// path, query and any user info dropped; "" for a URL that does not parse.
func defaultMetricsURL(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return ""
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: "/metrics"}).String()
}

// probeMetrics reports whether GET u answers 200 with Prometheus text (a "# TYPE" or
// "# HELP" line among its first lines) within metricsProbeTimeout.
func probeMetrics(ctx context.Context, hc *http.Client, u string) bool {
	ctx, cancel := context.WithTimeout(ctx, metricsProbeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false
	}
	sc := bufio.NewScanner(io.LimitReader(resp.Body, 1<<20))
	for i := 0; i < 200 && sc.Scan(); i++ {
		if l := sc.Text(); strings.HasPrefix(l, "# TYPE ") || strings.HasPrefix(l, "# HELP ") {
			return true
		}
	}
	return false
}

// findMetrics sets t's scrape URL to /metrics at the endpoint's host when no URL is
// configured (server_metrics.url empty, not "off") and the probe finds Prometheus text there,
// and says so on stderr.
func (t *target) findMetrics(ctx context.Context, e *env) {
	if t.scrape.URL != "" || t.stopSim != nil {
		return
	}
	u := defaultMetricsURL(t.endpoint)
	if u == "" || !probeMetrics(ctx, &http.Client{}, u) {
		return
	}
	t.scrape.URL = u
	fmt.Fprintf(e.stderr, "kneecap: server metrics: scraping %s (found at the target's host; --server-metrics-url off to disable)\n", redact.URL(u))
}
