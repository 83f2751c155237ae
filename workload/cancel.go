package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/kneecap/kneecap/record"
)

// CancelConfig is workload.cancel: the share of requests whose user closes the stream early
// (DESIGN §3.6), after a number of content chunks or a time from the send, drawn per request.
type CancelConfig struct {
	// Fraction is the share of requests that are cancelled, in (0, 1].
	Fraction float64 `yaml:"fraction"`
	// After is the time from t_send at which a cancelled request's stream is closed.
	After *DurationDist `yaml:"after,omitempty"`
	// AfterTokens is the number of content chunks after which it is closed.
	AfterTokens *Dist `yaml:"after_tokens,omitempty"`
}

// DurationDist is a distribution of durations, in Dist's shape with durations for its values.
type DurationDist struct {
	// Dist is fixed, uniform, normal or lognormal.
	Dist string `yaml:"dist"`
	// Mean is the mean duration.
	Mean time.Duration `yaml:"mean"`
	// StdDev is the standard deviation (normal, lognormal).
	StdDev time.Duration `yaml:"stddev"`
	// Min and Max clamp the draw (uniform draws in [Min, Max]); 0 means unset.
	Min time.Duration `yaml:"min"`
	Max time.Duration `yaml:"max"`
}

// micros is d as a Dist in microseconds, the unit its draws are made in.
func (d DurationDist) micros() Dist {
	us := func(v time.Duration) float64 { return float64(v) / float64(time.Microsecond) }
	return Dist{Dist: d.Dist, Mean: us(d.Mean), StdDev: us(d.StdDev), Min: us(d.Min), Max: us(d.Max)}
}

// validate reports every problem of workload.cancel.
func (c *CancelConfig) validate(sessions bool) []error {
	var errs []error
	if !(c.Fraction > 0 && c.Fraction <= 1) {
		errs = append(errs, fmt.Errorf("workload.cancel.fraction: is %g: must be in (0, 1]", c.Fraction))
	}
	switch {
	case (c.After == nil) == (c.AfterTokens == nil):
		errs = append(errs, errors.New("workload.cancel: give exactly one of after (a duration distribution) and after_tokens (a distribution of content chunks)"))
	case c.After != nil:
		errs = append(errs, c.After.micros().Validate("workload.cancel.after", "µs")...)
	default:
		errs = append(errs, c.AfterTokens.Validate("workload.cancel.after_tokens", "token")...)
	}
	if sessions {
		errs = append(errs, errors.New("workload.cancel: cannot go with workload.sessions (a cancelled turn would end its conversation): remove one of the two"))
	}
	return errs
}

// cancelSalt separates the cancel draws' random streams from the requests' own
// (requestRand), so that workload.cancel leaves every request's prompt and length unchanged.
const cancelSalt = 0x63616e63656c6c73

// cancelling is a workload whose requests are cancelled by workload.cancel: the share
// Fraction of them, picked per (level, worker, seq), carries a record.Cancel drawn from the
// distribution. It is deterministic in the seed and those numbers, as every workload is, so a
// resumed run cancels the same requests.
type cancelling struct {
	Workload
	seed     int64
	fraction float64
	tokens   bool // after_tokens, else after
	draw     sampler
}

// WithCancel returns w with workload.cancel of cfg applied (cfg.Cancel nil: w itself).
// cfg must be valid (WorkloadConfig.Validate).
func WithCancel(w Workload, cfg WorkloadConfig) Workload {
	c := cfg.Cancel
	if c == nil {
		return w
	}
	out := &cancelling{Workload: w, seed: cfg.Seed, fraction: c.Fraction, tokens: c.AfterTokens != nil}
	if out.tokens {
		out.draw = newSampler(*c.AfterTokens)
	} else {
		out.draw = newSampler(c.After.micros())
	}
	return out
}

// Next returns the inner workload's request, marked to be cancelled when it is one of the
// Fraction drawn.
func (c *cancelling) Next(level, worker, seq int) record.Request {
	req := c.Workload.Next(level, worker, seq)
	if cancel := c.pick(level, worker, seq); cancel != nil {
		req.Cancel = cancel
	}
	return req
}

// pick returns the cancel of request (level, worker, seq), or nil when it is not cancelled.
func (c *cancelling) pick(level, worker, seq int) *record.Cancel {
	r := requestRand(c.seed^cancelSalt, level, worker, seq)
	if r.Float64() >= c.fraction {
		return nil
	}
	return c.drawCancel(r)
}

// drawCancel draws when a picked request is cancelled.
func (c *cancelling) drawCancel(r *rand.Rand) *record.Cancel {
	n := c.draw.Draw(r)
	if c.tokens {
		return &record.Cancel{AfterTokens: n}
	}
	return &record.Cancel{After: time.Duration(n) * time.Microsecond}
}
