package record

// ReadLag is a record's read-lag summary (Record.ReadLag): how many content chunks were
// timestamped, their largest lag and the histogram of their lags.
type ReadLag struct {
	// Count is the number of content chunks with a read lag.
	Count int `json:"count"`
	// MaxUS is the largest read lag, µs.
	MaxUS int64 `json:"max_us"`
	// Missed counts the content chunks read before the connection had a kernel timestamp.
	Missed int `json:"missed,omitempty"`
	// Buckets is the histogram: [lower bound in µs, count] of each bucket of ReadLagBucket
	// that holds a lag, in ascending order.
	Buckets [][2]int64 `json:"buckets,omitempty"`
}
