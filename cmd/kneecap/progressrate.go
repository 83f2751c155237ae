package main

import (
	"fmt"
)

// describeRate names a rate level at the start of its status line: "level 3/8  12.5 req/s".
func (p *progress) describeRate(index int) string {
	if p.current {
		return fmt.Sprintf("added %d/%d  %s req/s", p.added, p.refine, p.nextRate)
	}
	rate := "?"
	if index < len(p.rates) {
		rate = fmt.Sprintf("%.4g", p.rates[index])
	}
	return fmt.Sprintf("level %d/%d  %s req/s", index+1, len(p.rates), rate)
}

// AddingRate announces the next added rate level (sweep.refine), or that none is needed.
func (p *progress) AddingRate(rps float64, why string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	if rps <= 0 {
		p.noMore = true
		what := "no level added"
		if p.added > 0 {
			what = "no further level needed"
		}
		fmt.Fprintf(p.w, "kneecap: %s: each answer found (SLO limit, capacity, TTFT blow-up) lies within 5%% of a rate already run, or outside the range run\n", what)
		return
	}
	p.next = true
	p.nextRate = fmt.Sprintf("%.4g", rps)
	fmt.Fprintf(p.w, "kneecap: adding %s requests/s (%d of at most %d): %s\n", p.nextRate, p.added+1, p.refine, why)
}
