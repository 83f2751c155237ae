package analysis

import (
	"time"

	"github.com/kneecap/kneecap/record"
)

// ReadLag is a level's client read lag (record.ClientStats.ReadLag…, DESIGN §3.3): from the
// kernel's arrival time of the bytes to the moment the client timestamped each content chunk.
type ReadLag struct {
	// P50MS, P99MS and MaxMS are the lag's median, p99 and largest value, in milliseconds.
	P50MS float64 `json:"p50_ms"`
	P99MS float64 `json:"p99_ms"`
	MaxMS float64 `json:"max_ms"`
	// ThresholdMS is the p99 above which the level is client-bound (max(4 ms, 20% of ITL p50)).
	ThresholdMS float64 `json:"threshold_ms"`
	// Chunks is the number of timestamped content chunks; Coverage their share of the window's.
	Chunks   int     `json:"chunks"`
	Coverage float64 `json:"coverage"`
}

// TTFTSummary is a level's TTFT on one clock, in milliseconds, over the requests of
// Level.TTFT's population that have it: from the kernel's receive timestamps
// (Level.TTFTKernel) or on the client's clock (Level.TTFTClient).
type TTFTSummary struct {
	P50 Float `json:"p50"`
	P95 Float `json:"p95"`
	P99 Float `json:"p99"`
	// Requests is the number of requests it covers (of Level.TTFT's population).
	Requests int `json:"requests"`
}

// KernelTTFT is a level's TTFT from the kernel's receive timestamps: beside the client's
// (Level.TTFTClient, or Level.TTFT on records from before the kernel's clock), the difference
// is the client's read lag of the first chunk.
type KernelTTFT = TTFTSummary

// ttftSummaryOf summarises values (ms, sorted in place), nil when empty.
func ttftSummaryOf(values []float64) *TTFTSummary {
	if len(values) == 0 {
		return nil
	}
	l := LatencyOf(values)
	return &TTFTSummary{P50: l.P50, P95: l.P95, P99: l.P99, Requests: len(values)}
}

// readLagOf returns the evidence that decided a level's client verdict and its read lag (nil
// without timestamps).
func readLagOf(cs *record.ClientStats) (string, *ReadLag) {
	if cs == nil {
		return "", nil
	}
	if cs.ReadLagChunks == 0 {
		return cs.Evidence, nil
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return cs.Evidence, &ReadLag{P50MS: ms(cs.ReadLagP50), P99MS: ms(cs.ReadLagP99), MaxMS: ms(cs.ReadLagMax),
		ThresholdMS: ms(cs.ReadLagThreshold), Chunks: cs.ReadLagChunks, Coverage: cs.ReadLagCoverage}
}
