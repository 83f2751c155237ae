package sim

import "sync"

// Prefix caching (Config.PrefixCaching), as vLLM V1's automatic prefix caching: a request's
// token sequence is cut into blocks of BlockSize tokens; block i's hash chains block i−1's
// hash and block i's ids, so equal hashes mean equal prefixes. The cache is an LRU of block
// hashes of bounded capacity. At admission a request's leading full blocks that are cached
// are not prefilled (at least one prompt token always is, as vLLM recomputes the last one);
// when its prefill completes its prompt's full blocks are cached, and when it finishes those
// of its prompt and output.

// hashRoot is the parent hash of a sequence's first block.
const hashRoot uint64 = 0x6b6e65656361703a // "kneecap:"

// FNV-1a, 64 bits.
const (
	fnvOffset64 uint64 = 14695981039346656037
	fnvPrime64  uint64 = 1099511628211
)

// blockHash is the hash of one block: FNV-1a (64 bits) over the parent's hash and the
// block's token ids, 8 bytes each, little endian.
func blockHash(parent uint64, ids []int) uint64 {
	h := fnvOffset64
	mix := func(v uint64) {
		for range 8 {
			h ^= v & 0xff
			h *= fnvPrime64
			v >>= 8
		}
	}
	mix(parent)
	for _, id := range ids {
		mix(uint64(id))
	}
	return h
}

// appendBlockHashes appends the hashes of the full blocks of ids that start at block from
// (block from−1 has hash parent; hashRoot when from is 0).
func appendBlockHashes(dst []uint64, ids []int, size, from int, parent uint64) []uint64 {
	for i := from; (i+1)*size <= len(ids); i++ {
		parent = blockHash(parent, ids[i*size:(i+1)*size])
		dst = append(dst, parent)
	}
	return dst
}

// prefixPrompt is the prefix-caching state of one request, built by its handler before the
// request is submitted: the prompt's ids and the hashes of its full blocks.
type prefixPrompt struct {
	ids    []int
	hashes []uint64
	root   uint64   // the parent hash of the first block (hashRoot, or an adapter's)
	req    *request // set by newSource
}

func newPrefixPrompt(ids []int, size int) *prefixPrompt {
	return rootedPrefixPrompt(ids, size, hashRoot)
}

// rootedPrefixPrompt is newPrefixPrompt with root the parent of its first block: a LoRA
// adapter's requests hash from a root of their own (Config.prefixRoot), so they share no
// cached block with the base model's or another adapter's, as vLLM keys its blocks by adapter.
func rootedPrefixPrompt(ids []int, size int, root uint64) *prefixPrompt {
	return &prefixPrompt{ids: ids, root: root, hashes: appendBlockHashes(nil, ids, size, 0, root)}
}

// outputHashes returns the hashes of every full block of the prompt followed by the output
// the request streamed: reasoning tokens ("hmm") first, then answer tokens ("tok"), as one
// id each. The blocks after the prompt's are hashed through one buffer of size ids.
func (p *prefixPrompt) outputHashes(size, reasoning, answer int) []uint64 {
	full := len(p.hashes)
	tail := p.ids[full*size:]
	n := (len(tail) + reasoning + answer) / size * size // ids in full blocks after the prompt's
	out := make([]uint64, full, full+n/size)
	copy(out, p.hashes)
	parent := p.root
	if full > 0 {
		parent = p.hashes[full-1]
	}
	hmm, tok := tokenID(reasoningText[:3]), tokenID(answerText[:3])
	buf := make([]int, 0, size)
	for i := range n {
		id := tok
		if i < len(tail) {
			id = tail[i]
		} else if i < len(tail)+reasoning {
			id = hmm
		}
		buf = append(buf, id)
		if len(buf) == size {
			parent = blockHash(parent, buf)
			out = append(out, parent)
			buf = buf[:0]
		}
	}
	return out
}

// prefixCache is a bounded LRU of block hashes, safe for concurrent use: the engine goroutine
// looks up and inserts prompts, handlers insert finished outputs.
type prefixCache struct {
	mu    sync.Mutex
	cap   int
	index map[uint64]int32 // hash → node
	nodes []lruNode
	head  int32 // most recently used; -1 when empty
	tail  int32 // least recently used; -1 when empty
}

type lruNode struct {
	hash       uint64
	prev, next int32
}

func newPrefixCache(capacity int) *prefixCache {
	return &prefixCache{cap: max(capacity, 1), index: map[uint64]int32{}, head: -1, tail: -1}
}

// lookup returns the number of leading blocks of hashes that are cached, at most limit, and
// makes them the most recently used (the first block most recent of all, so that a prefix
// is evicted from its end).
func (c *prefixCache) lookup(hashes []uint64, limit int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for n < limit && n < len(hashes) {
		if _, ok := c.index[hashes[n]]; !ok {
			break
		}
		n++
	}
	for i := n - 1; i >= 0; i-- {
		c.touch(c.index[hashes[i]])
	}
	return n
}

// insert caches every block of hashes, the first most recently used, evicting the least
// recently used blocks beyond the capacity.
func (c *prefixCache) insert(hashes []uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := len(hashes) - 1; i >= 0; i-- {
		h := hashes[i]
		if n, ok := c.index[h]; ok {
			c.touch(n)
			continue
		}
		var n int32
		if len(c.index) >= c.cap {
			n = c.tail // reuse the evicted node
			c.unlink(n)
			delete(c.index, c.nodes[n].hash)
		} else {
			c.nodes = append(c.nodes, lruNode{})
			n = int32(len(c.nodes) - 1)
		}
		c.nodes[n] = lruNode{hash: h, prev: -1, next: -1}
		c.index[h] = n
		c.pushFront(n)
	}
}

// len returns the number of blocks cached.
func (c *prefixCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.index)
}

func (c *prefixCache) touch(n int32) {
	if c.head == n {
		return
	}
	c.unlink(n)
	c.pushFront(n)
}

func (c *prefixCache) unlink(n int32) {
	nd := &c.nodes[n]
	if nd.prev >= 0 {
		c.nodes[nd.prev].next = nd.next
	} else {
		c.head = nd.next
	}
	if nd.next >= 0 {
		c.nodes[nd.next].prev = nd.prev
	} else {
		c.tail = nd.prev
	}
	nd.prev, nd.next = -1, -1
}

func (c *prefixCache) pushFront(n int32) {
	nd := &c.nodes[n]
	nd.prev, nd.next = -1, c.head
	if c.head >= 0 {
		c.nodes[c.head].prev = n
	}
	c.head = n
	if c.tail < 0 {
		c.tail = n
	}
}

// prefixLookup runs the admission lookup of r (the engine goroutine): the cached leading
// blocks of its prompt, capped so that one prompt token is prefilled, are not prefilled but
// count as KV in use at once. Every lookup, a re-admission's after preemption too, saves its
// hit; only a request's first lookup counts, in the queried tokens (its prompt), the hit
// tokens and its usage's cached tokens, as vLLM V1 counts a preempted request's repeat lookup
// apart and exports only the first.
func (e *engine) prefixLookup(r *request) {
	size := e.cfg.BlockSize
	hit := e.prefix.lookup(r.blocks, (r.prompt-1)/size) * size
	r.prefillLeft -= hit
	r.kvActive += hit
	e.kvActive += hit
	if !r.looked {
		r.looked = true
		r.cached.Store(int64(hit))
		e.prefixQueries += int64(r.prompt)
		e.prefixHits += int64(hit)
	}
}

// cacheOutput caches the full blocks of p's prompt and output once the request has produced
// its last token (the handler, before the client can see that token).
func (s *Server) cacheOutput(p *plan, n int) {
	if p.prefix == nil || s.eng == nil || s.eng.prefix == nil {
		return
	}
	r := min(p.reasoning, n)
	s.eng.prefix.insert(p.prefix.outputHashes(s.cfg.BlockSize, r, n-r))
}

// cachedTokens is the prompt tokens p's request found in the prefix cache, or -1 when prefix
// caching is off (or in fixed mode).
func (p *plan) cachedTokens() int64 {
	if p.prefix == nil || p.prefix.req == nil {
		return -1
	}
	return p.prefix.req.cached.Load()
}
