package sim

import (
	"context"
	"math"
	"net/http"
	"sync"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"
)

// TestEmbeddingsAnswer checks POST /v1/embeddings through go-openai: one unit vector of the
// configured dimension per input, in order, the same vector for the same text, and usage
// counting the inputs' tokens (words) without a chat template.
func TestEmbeddingsAnswer(t *testing.T) {
	cfg, _ := Profile(ProfileFixed)
	cfg.ChatTemplateTokens = 7
	cfg.Embed.Dimension = 5
	_, url := newTestServer(t, cfg)
	c := newClient(url)
	in := []string{"one two three", "four", "one two three"}
	res, err := c.CreateEmbeddings(context.Background(), openai.EmbeddingRequest{Input: in, Model: DefaultModel})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Data) != 3 || res.Usage.PromptTokens != 7 || res.Usage.TotalTokens != 7 {
		t.Fatalf("%d vectors, usage %+v; want 3 and 7 tokens", len(res.Data), res.Usage)
	}
	for i, d := range res.Data {
		norm := 0.0
		for _, x := range d.Embedding {
			norm += float64(x) * float64(x)
		}
		if d.Index != i || len(d.Embedding) != 5 || math.Abs(norm-1) > 1e-4 {
			t.Errorf("data[%d]: index %d, %d dimensions, |v|² %g", i, d.Index, len(d.Embedding), norm)
		}
	}
	for j := range res.Data[0].Embedding {
		if res.Data[0].Embedding[j] != res.Data[2].Embedding[j] {
			t.Fatalf("the same text embedded differently: %v %v", res.Data[0].Embedding, res.Data[2].Embedding)
		}
	}
}

// TestEmbeddingsRefused answers 400 to inputs that cannot be embedded, as vLLM does.
func TestEmbeddingsRefused(t *testing.T) {
	cfg, _ := Profile(ProfileFixed)
	cfg.MaxModelLen = 3
	_, url := newTestServer(t, cfg)
	for _, body := range []string{`{"input":[]}`, `{"input":""}`, `{"input":{"a":1}}`, `{"input":"a b c d"}`, `{"input":["a",""]}`} {
		if code, b := rawPost(t, url, "/v1/embeddings", body); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", body, code, b)
		}
	}
	if code, b := rawPost(t, url, "/v1/embeddings", `{"input":[[1,2,3]]}`); code != http.StatusOK {
		t.Errorf("token ids: %d %s", code, b)
	}
}

// TestEmbeddingsBatchLimit sends 2·batch single-input requests at once: a pass embeds at most
// batch inputs, so the engine runs at least two passes to answer them all.
func TestEmbeddingsBatchLimit(t *testing.T) {
	cfg, _ := Profile(ProfileFixed)
	cfg.Embed = Embed{Batch: 2, StepBase: 20 * time.Millisecond, PerToken: time.Millisecond}
	srv, url := newTestServer(t, cfg)
	c := newClient(url)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			if _, err := c.CreateEmbeddings(context.Background(), openai.EmbeddingRequest{Input: []string{"a b"}, Model: DefaultModel}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if n := srv.embed.passes.Load(); n < 2 {
		t.Fatalf("4 inputs in %d passes, want at least two passes of 2", n)
	}
}

// TestEmbedTPS checks the plateau formula: Batch·L ÷ (StepBase + Batch·L·PerToken).
func TestEmbedTPS(t *testing.T) {
	e := Embed{Batch: 16, StepBase: 2 * time.Millisecond, PerToken: 10 * time.Microsecond}
	if got, want := e.embedTPS(64), 1024/(0.002+1024*10e-6); math.Abs(got-want) > 1e-6 {
		t.Fatalf("embedTPS %g, want %g", got, want)
	}
	if err := (Embed{Batch: -1}).validate(); err == nil {
		t.Fatal("a negative batch was accepted")
	}
}

// TestEmbedCounts: a request is waiting until a pass takes its first input, running until
// its last is embedded or its client leaves, and a request that left is skipped.
func TestEmbedCounts(t *testing.T) {
	e := &embedEngine{cfg: Embed{Batch: 2}.resolved(), wake: make(chan struct{}, 1)}
	now := time.Now()
	a, b, c := e.submit([]int{3}, now), e.submit([]int{3, 4}, now), e.submit([]int{5}, now)
	if r, w := e.counts(); r != 0 || w != 3 {
		t.Fatalf("before a pass: running %d waiting %d, want 0 and 3", r, w)
	}
	pass := e.take(nil)
	if len(pass) != 2 || pass[0].job != a || pass[1].job != b {
		t.Fatalf("first pass takes %d inputs, want a's and b's first", len(pass))
	}
	if r, w := e.counts(); r != 2 || w != 1 {
		t.Errorf("in the first pass: running %d waiting %d, want 2 and 1", r, w)
	}
	e.leave(c)
	e.leave(a)
	if r, w := e.counts(); r != 1 || w != 0 {
		t.Errorf("after a and c left: running %d waiting %d, want 1 and 0", r, w)
	}
	if pass = e.take(pass[:0]); len(pass) != 1 || pass[0].job != b || pass[0].tokens != 4 {
		t.Errorf("second pass: %d inputs, want b's second alone (c left)", len(pass))
	}
}
