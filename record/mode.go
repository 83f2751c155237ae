package record

// Mode is the load model of a sweep: analysis.json's mode (DESIGN §4.15).
type Mode string

// The modes of a sweep.
const (
	// ModeConcurrency: closed loop, each level a number of clients that each send their next
	// request when the last one ends (levels[].concurrency).
	ModeConcurrency Mode = "concurrency"
	// ModeRate: open loop, each level an offered arrival rate in requests/s whose requests
	// arrive on a schedule whatever the server does (levels[].offered_rps).
	ModeRate Mode = "rate"
)

// Label names the mode as the reports do: "closed-loop concurrency sweep", "open-loop
// arrival-rate sweep". An empty mode (an analysis.json from before the key) is closed loop.
func (m Mode) Label() string {
	if m == ModeRate {
		return "open-loop arrival-rate sweep"
	}
	return "closed-loop concurrency sweep"
}

// Of returns m, or ModeConcurrency when m is empty (an analysis.json from before the key).
func (m Mode) Of() Mode {
	if m == "" {
		return ModeConcurrency
	}
	return m
}

// IsRate reports whether m is the open loop (ModeRate): the one way the packages past the
// load generator ask whether a run is an arrival-rate run.
func (m Mode) IsRate() bool { return m == ModeRate }

// Mode returns the mode the level was run in: ModeRate when it offered an arrival rate
// (OfferedRPS > 0: an open-loop level, a trace replay's too), else ModeConcurrency.
func (r *LevelRun) Mode() Mode {
	if r.OfferedRPS > 0 {
		return ModeRate
	}
	return ModeConcurrency
}
