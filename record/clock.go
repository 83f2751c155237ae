package record

import "time"

// MaxClockOffset is the largest offset a clock reading may find (DESIGN §8). NTP keeps
// machines within milliseconds and an unsynchronised one drifts by seconds a day, so a
// difference of an hour or more is a clock set wrong (a time zone taken for UTC, a VM
// restored from a snapshot) or a server that is not the sweep's reference, and a level
// scheduled on it would wait hours, or miss its slot, on every shard that read it. A reading
// beyond it is an error: the level runs on the previous offset.
const MaxClockOffset = time.Hour

// ClockOffset is one reading of a shard's clock against the sweep's reference clock, taken
// before a level (LevelRun.Clock; DESIGN §8): Cristian's method, the exchange with the
// smallest round trip of several. A shard without a clock server records only its kernel's
// NTP state (Server empty): the shards then trust their clocks to agree.
type ClockOffset struct {
	// Server is the clock server's address as given (shard.clock_server, --clock-server);
	// empty when the shard measured against none.
	Server string `json:"server,omitempty"`
	// Reference is set when this process is the clock the others measure against (it serves
	// it, and measured itself or measured none): its Offset is 0 by definition.
	Reference bool `json:"reference,omitempty"`
	// At is when the kept exchange was sent, on this process's clock (Unix ns).
	At int64 `json:"measured_unix_ns,omitempty"`
	// Offset is this process's clock minus the reference clock (ns): a time t this process
	// recorded is t − Offset on the reference clock. The level ran on it: its scheduled start
	// was the agreed one on the reference clock.
	Offset int64 `json:"offset_ns"`
	// RTT is the kept exchange's round trip (ns); Uncertainty bounds Offset's error: RTT ÷ 2
	// (the server's reading lies somewhere in the round trip).
	RTT         int64 `json:"rtt_ns,omitempty"`
	Uncertainty int64 `json:"uncertainty_ns,omitempty"`
	// Exchanges is how many exchanges the reading made (the one with the smallest RTT kept).
	Exchanges int `json:"exchanges,omitempty"`
	// Error says why no offset was measured; Offset is then the one the level ran on (the
	// previous reading's, or 0 before any).
	Error string `json:"error,omitempty"`
	// NTP is the kernel's account of its clock discipline (adjtimex on Linux): nil where the
	// kernel has none to give.
	NTP *NTPState `json:"ntp,omitempty"`
}

// NTPState is what the kernel says of its clock's synchronisation (Linux adjtimex(2)).
type NTPState struct {
	// Synced is false when the kernel marks the clock unsynchronised (STA_UNSYNC, or
	// adjtimex's TIME_ERROR): no NTP or chrony daemon is steering it.
	Synced bool `json:"synced"`
	// EstError and MaxError are the kernel's estimated and maximum error of the clock (ns),
	// as the daemon last set them.
	EstError int64 `json:"est_error_ns,omitempty"`
	MaxError int64 `json:"max_error_ns,omitempty"`
}

// Shift moves every absolute time of r (Sent, Scheduled, ClientSent) by d nanoseconds; its
// durations stay. Merging a shard's records onto the reference clock shifts them by −Offset.
func (r *Record) Shift(d int64) {
	r.Sent += d
	if r.Scheduled != 0 {
		r.Scheduled += d
	}
	if r.ClientSent != 0 {
		r.ClientSent += d
	}
}

// Shift moves the level's phase boundaries (WarmupStart, W0, W1, DrainEnd) by d nanoseconds.
func (l *LevelRun) Shift(d int64) {
	l.WarmupStart += d
	l.W0 += d
	l.W1 += d
	l.DrainEnd += d
}
