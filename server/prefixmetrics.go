package server

import (
	"github.com/kneecap/kneecap/record"
)

// counterIncrease is the increase of a cumulative counter over a window: from the last
// sample before it (else the first in it) to the last in it, a decrease counted as a reset
// to 0 (a restarted server).
type counterIncrease struct {
	base, prev *float64
	increase   float64
	seen       bool
}

// before notes v, a sample before the window.
func (c *counterIncrease) before(v *float64) {
	if v != nil {
		c.base = v
	}
}

// in adds v, a sample in the window.
func (c *counterIncrease) in(v *float64) {
	if v == nil {
		return
	}
	c.seen = true
	if c.prev == nil {
		c.prev = c.base
	}
	if c.prev != nil {
		if *v >= *c.prev {
			c.increase += *v - *c.prev
		} else {
			c.increase += *v // counter reset
		}
	}
	c.prev = v
}

// prefixWindow gathers a window's prefix-cache samples.
type prefixWindow struct {
	hits, queries counterIncrease
	rateSum       float64
	rateN         int
}

func (p *prefixWindow) before(m *MetricSample) {
	p.hits.before(m.PrefixCacheHits)
	p.queries.before(m.PrefixCacheQueries)
}

func (p *prefixWindow) in(m *MetricSample) {
	p.hits.in(m.PrefixCacheHits)
	p.queries.in(m.PrefixCacheQueries)
	if r := m.PrefixCacheHitRate; r != nil {
		p.rateSum += *r
		p.rateN++
	}
}

// set stores the window's hit rate in st: the counters' when the server was queried in the
// window, else the gauge's mean.
func (p *prefixWindow) set(st *record.ServerStats) {
	if p.hits.seen && p.queries.seen {
		st.PrefixCacheHits, st.PrefixCacheQueries = p.hits.increase, p.queries.increase
		if q := p.queries.increase; q > 0 {
			r := min(1, p.hits.increase/q)
			st.PrefixCacheHitRate = &r
			st.PrefixCacheSource = record.PrefixFromCounters
			return
		}
	}
	if p.rateN > 0 {
		r := p.rateSum / float64(p.rateN)
		st.PrefixCacheHitRate = &r
		st.PrefixCacheSource = record.PrefixFromGauge
	}
}
