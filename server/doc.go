// Package server is what kneecap learns from the server besides its answers (DESIGN §3.7,
// §3.1): which engine it is (IdentifyServer, from its info endpoints), its Prometheus metrics
// over a level's window (Scraper: running and waiting requests, KV-cache usage, preemptions,
// the prefix-cache hit rate), and the preflight probe that checks the target and estimates a
// request's E2E before the sweep plans its windows.
package server
