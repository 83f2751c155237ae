package report

import (
	"slices"

	"github.com/kneecap/kneecap/analysis"
)

// prefixCacheHead is the level tables' prefix-cache column (report.md, report.html).
const prefixCacheHead = "prefix-cache hit"

// hasPrefixCache reports whether some level of res has a prefix-cache hit rate: only then do
// the level tables show the column (the console stays within 80 columns otherwise).
func hasPrefixCache(res *analysis.Result) bool {
	for i := range res.Levels {
		if res.Levels[i].PrefixHitRate().OK() {
			return true
		}
	}
	return false
}

// withPrefixCache inserts the prefix-cache hit rate after the column named after ("—" where a
// level has none), when some level has one; the rows are rowLevels' (a table whose rows are
// not is left as it is).
func withPrefixCache(t table, res *analysis.Result, after string) table {
	at := slices.Index(t.Header, after) + 1
	if !hasPrefixCache(res) || at == 0 {
		return t
	}
	levels := rowLevels(res)
	if len(levels) != len(t.Rows) {
		return t
	}
	t.Header = slices.Insert(slices.Clone(t.Header), at, prefixCacheHead)
	for i := range levels {
		t.Rows[i] = slices.Insert(slices.Clone(t.Rows[i]), at, prefixCacheCell(&levels[i]))
	}
	return t
}

// prefixCacheCell is a level's hit rate ("50.0%"), "—" when unknown.
func prefixCacheCell(l *analysis.Level) string { return fpct(l.PrefixHitRate()) }

// colHit is the console's prefix-cache column, after TTFT p95 (LevelTable.WithPrefixCache).
var colHit = consoleColumn{"hit", 5, prefixCacheCell}

// WithPrefixCache returns t with the prefix-cache hit rate after its TTFT p95 column (the
// console shows it when some level has a hit rate: the default closed-loop set is then 79
// characters wide). A table without that column is returned as it is.
func (t LevelTable) WithPrefixCache() LevelTable {
	for i, c := range t.cols {
		if c.head == colTTFT95.head {
			out := LevelTable{cols: slices.Insert(slices.Clone(t.cols), i+1, colHit), widths: slices.Insert(slices.Clone(t.widths), i+1, colHit.width)}
			return out
		}
	}
	return t
}

// consoleHit reports whether the console's level table shows the hit rate: when some level
// has one, in the closed-loop default set and every wide set (the rate default set would pass
// 80 columns).
func consoleHit(res *analysis.Result, wide bool) bool {
	return hasPrefixCache(res) && (wide || !res.Mode.IsRate())
}
