package summary

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kneecap/kneecap/analysis"
)

// TestCSVPrefixCache: the prefix-cache columns follow fixed_output, before the verdict columns
// appended after them (CSV columns are a contract: extended, never reordered), round-trip the hit rate and its source, are empty when it is
// unknown, and a rate outside [0, 1] or an unknown source is an error naming the line and
// column (an older kneecap's server_metrics is read).
func TestCSVPrefixCache(t *testing.T) {
	in := sampleLevels()[:2]
	in[0].PrefixCache = &analysis.PrefixCache{HitRate: 0.5, Source: analysis.PrefixFromCounters, UsageHitRate: analysis.NaN()}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, in); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(buf.String(), "\n")
	if !strings.HasSuffix(lines[0], ",fixed_output,prefix_cache_hit_rate,prefix_cache_source,imprecise,latency_rising") ||
		!strings.HasSuffix(lines[1], ",0.5,server_counters,false,false") || !strings.HasSuffix(lines[2], ",,,false,false") {
		t.Fatalf("csv:\n%s", buf.String())
	}
	out, err := ReadCSV(bytes.NewReader(buf.Bytes()), "levels.csv")
	if err != nil {
		t.Fatal(err)
	}
	if pc := out[0].PrefixCache; pc == nil || pc.HitRate != 0.5 || pc.Source != analysis.PrefixFromCounters || out[1].PrefixCache != nil {
		t.Errorf("read back %+v, %+v", out[0].PrefixCache, out[1].PrefixCache)
	}
	_, err = ReadCSV(strings.NewReader("concurrency,output_tps,prefix_cache_hit_rate\n1,10,1.5\n"), "x.csv")
	if err == nil || !strings.Contains(err.Error(), `x.csv:2: column "prefix_cache_hit_rate": "1.5": a hit rate is a fraction in [0, 1]`) {
		t.Errorf("error %v", err)
	}
	_, err = ReadCSV(strings.NewReader("concurrency,output_tps,prefix_cache_hit_rate,prefix_cache_source\n1,10,0.5,metrics\n"), "x.csv")
	if err == nil || !strings.Contains(err.Error(), `x.csv:2: column "prefix_cache_source": "metrics": a prefix-cache source is server_counters, usage or server_gauge`) {
		t.Errorf("error %v", err)
	}
	old, err := ReadCSV(strings.NewReader("concurrency,output_tps,prefix_cache_hit_rate,prefix_cache_source\n1,10,0.5,server_metrics\n"), "x.csv")
	if err != nil || old[0].PrefixCache == nil || old[0].PrefixCache.Source != "server_metrics" {
		t.Errorf("an older summary.csv: %v", err)
	}
}
