package sweep_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kneecap/kneecap/record"
	"github.com/kneecap/kneecap/sim"
	"github.com/kneecap/kneecap/sweep/openai"
)

// TestTracePrefixCache replays traceSample's 30 requests one at a time (the completions API:
// no chat template) against the batching simulator with prefix caching in blocks of 1 token,
// so its hit tokens are exactly Σ min(prompt − 1, the longest common word prefix with an
// earlier prompt) (sim/prefix.go: the leading cached blocks, capped so one token is
// prefilled). Each prompt's common prefix is the first word and 2 tokens a shared leading
// hash id (1 + 2k, k the leading ids an earlier request also began with), and at most one
// word more by chance (a table word in common at the next block's start); the simulator's
// /metrics counters give those hits.
func TestTracePrefixCache(t *testing.T) {
	rc, err := sim.Resolve(sim.Config{Profile: sim.ProfileDemo, PrefixCaching: true, BlockSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := sim.Start(rc, "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	o := openai.DefaultOptions()
	o.BaseURL, o.Model, o.API, o.RequestTimeout = srv.URL, sim.DefaultModel, record.APICompletions, 10*time.Second
	client, err := openai.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	tr, w := sampleTrace(t, record.APICompletions)
	var seen [][]string
	var ids [][]int64
	var wantHit, wantQuery int64
	for seq := range tr.Len() {
		req := w.Next(0, 0, seq)
		var rec record.Record
		client.Do(context.Background(), &req, &rec)
		if !rec.OK() {
			t.Fatalf("request %d: %s %s", seq, rec.ErrorClass, rec.Error)
		}
		words, e := strings.Fields(req.Prompt), tr.Entry(seq)
		lcp, k := 0, 0
		for i, p := range seen {
			lcp = max(lcp, common(words, p))
			k = max(k, commonIDs(e.HashIDs, ids[i]))
		}
		if len(seen) > 0 && (lcp < 1+2*k || lcp > 2+2*k) && lcp < len(words) {
			t.Errorf("request %d: common prefix %d words, want 1 + 2 × %d shared leading ids (+1)", seq, lcp, k)
		}
		wantHit += int64(min(len(words)-1, lcp))
		wantQuery += int64(len(words))
		seen, ids = append(seen, words), append(ids, e.HashIDs)
	}
	st := srv.Server.Stats()
	t.Logf("prefix cache: %d of %d prompt tokens hit (%.0f%%)", st.PrefixHitTokens, st.PrefixQueryTokens, 100*float64(st.PrefixHitTokens)/float64(st.PrefixQueryTokens))
	if st.PrefixQueryTokens != wantQuery || st.PrefixHitTokens != wantHit {
		t.Errorf("simulator: %d hit of %d queried tokens, want %d of %d", st.PrefixHitTokens, st.PrefixQueryTokens, wantHit, wantQuery)
	}
}

// common returns the length of the common prefix of a and b.
func common(a, b []string) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// commonIDs returns the number of leading hash ids a and b share.
func commonIDs(a, b []int64) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}
