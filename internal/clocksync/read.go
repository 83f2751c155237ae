package clocksync

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/kneecap/kneecap/record"
)

// Options says how Read measures.
type Options struct {
	// Exchanges is how many exchanges one reading makes; the one with the smallest round
	// trip is kept.
	Exchanges int
	// Now reads this process's wall clock (time.Now when nil): the exchange's local send
	// time; the round trip is timed on the monotonic clock. A test skews it.
	Now func() time.Time
	// Self is the instance id of the Server this process runs (0: none). Reading a server
	// with this id is reading oneself: the reading is the reference, offset 0.
	Self uint64
	// DialTimeout bounds one attempt to connect; ExchangeTimeout one exchange.
	DialTimeout, ExchangeTimeout time.Duration
	// MaxBackoff is the longest wait between two attempts to connect (they start 10 ms
	// apart and double).
	MaxBackoff time.Duration
}

// DefaultExchanges is Options.Exchanges' default: enough that one exchange is rarely
// delayed by the scheduler or the network at both ends, few enough to take milliseconds.
const DefaultExchanges = 16

// DefaultOptions returns 16 exchanges, time.Now, a dial timeout of 1 s, an exchange timeout
// of 1 s and at most 200 ms between attempts to connect.
func DefaultOptions() Options {
	return Options{Exchanges: DefaultExchanges, Now: time.Now, DialTimeout: time.Second,
		ExchangeTimeout: time.Second, MaxBackoff: 200 * time.Millisecond}
}

// Read measures this process's clock against the Server at addr (host:port) by Cristian's
// method: opts.Exchanges exchanges on one connection, keeping the one with the smallest
// round trip, whose midpoint on this clock is taken to be when the server read its clock.
// Offset is then that midpoint minus the server's reading, Uncertainty half the round trip,
// At the exchange's send time. Reading one's own server (opts.Self) gives Reference and
// Offset 0. Until ctx ends Read retries the connection (the server may start later than
// this process) and a connection that fails before its first exchange; an answer that is not
// the clock exchange fails at once. The error names addr and what failed; the reading
// returned with it has Server and Error set.
func Read(ctx context.Context, addr string, opts Options) (record.ClockOffset, error) {
	opts = opts.withDefaults()
	res, err := read(ctx, addr, opts)
	res.Server = addr
	if err != nil {
		err = fmt.Errorf("clock server %s: %w", addr, err)
		return record.ClockOffset{Server: addr, Error: err.Error()}, err
	}
	return res, nil
}

// read dials addr until it answers or ctx ends, then measures on that connection.
func read(ctx context.Context, addr string, opts Options) (record.ClockOffset, error) {
	backoff := 10 * time.Millisecond
	var last error // the last attempt's failure
	for attempt := 1; ; attempt++ {
		d := net.Dialer{Timeout: opts.DialTimeout}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			res, retry, xerr := measure(ctx, conn, opts)
			conn.Close()
			if xerr == nil || !retry {
				return res, xerr
			}
			err = xerr
		}
		if ctx.Err() != nil {
			// This attempt was likely cut short by ctx: the one before says more.
			return record.ClockOffset{}, noReading(attempt, cmp.Or(last, err))
		}
		last = err
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return record.ClockOffset{}, noReading(attempt, last)
		case <-t.C:
		}
		backoff = min(2*backoff, opts.MaxBackoff)
	}
}

// measure makes opts.Exchanges exchanges on conn and keeps the one with the smallest round
// trip. A failure after an exchange has succeeded ends the reading with what it has; one
// before may be retried on a new connection (retry), unless the server is no clock server or
// its clock is more than record.MaxClockOffset off, which ends the reading at once.
func measure(ctx context.Context, conn net.Conn, opts Options) (best record.ClockOffset, retry bool, err error) {
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	var id uint64
	for i := range opts.Exchanges {
		x, xid, err := exchange(ctx, conn, uint64(i)+1, opts)
		switch {
		case errors.Is(err, errNotExchange), errors.Is(err, errFarOff):
			return record.ClockOffset{}, false, err
		case err != nil && best.Exchanges > 0:
			return best, false, nil
		case err != nil:
			return record.ClockOffset{}, true, err
		case best.Exchanges > 0 && xid != id:
			return record.ClockOffset{}, false, fmt.Errorf("its instance id changed between exchanges on one connection: %w", errNotExchange)
		}
		id = xid
		if xid == opts.Self && opts.Self != 0 {
			x.Reference, x.Offset, x.Uncertainty, x.Exchanges = true, 0, 0, 1
			return x, false, nil
		}
		n := best.Exchanges + 1
		if best.Exchanges == 0 || x.RTT < best.RTT {
			best = x
		}
		best.Exchanges = n
	}
	return best, false, nil
}

// exchange sends one request with nonce on conn and reads its answer: the reading it gives
// (Offset, RTT, Uncertainty, At) and the server's instance id.
func exchange(ctx context.Context, conn net.Conn, nonce uint64, opts Options) (record.ClockOffset, uint64, error) {
	deadline := time.Now().Add(opts.ExchangeTimeout)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	if err := conn.SetDeadline(deadline); err != nil {
		return record.ClockOffset{}, 0, err
	}
	req := request(nonce)
	sent := opts.Now().UnixNano()
	mono := time.Now()
	if _, err := conn.Write(req[:]); err != nil {
		return record.ClockOffset{}, 0, fmt.Errorf("send: %w", err)
	}
	var a [answerSize]byte
	if _, err := io.ReadFull(conn, a[:]); err != nil {
		return record.ClockOffset{}, 0, fmt.Errorf("answer: %w", err)
	}
	rtt := time.Since(mono).Nanoseconds()
	if err := checkHeader(a[:], kindAnswer); err != nil {
		return record.ClockOffset{}, 0, err
	}
	if binary.BigEndian.Uint64(a[nonceOffset:]) != nonce {
		return record.ClockOffset{}, 0, fmt.Errorf("the answer is not to the request sent: %w", errNotExchange)
	}
	server := int64(binary.BigEndian.Uint64(a[serverOffset:]))
	if limit := int64(record.MaxClockOffset); server < sent-limit || server > sent+limit {
		// Compared so that nothing overflows: sent is a time of this century, server any int64.
		return record.ClockOffset{}, 0, fmt.Errorf("%w (it reads %+.4g s from this one, more than the %v a shard's clock may be off: is NTP or chrony running on both machines? is this the sweep's clock server?)",
			errFarOff, (float64(server)-float64(sent))/1e9, record.MaxClockOffset)
	}
	return record.ClockOffset{
		At:          sent,
		Offset:      sent + rtt/2 - server,
		RTT:         rtt,
		Uncertainty: rtt / 2,
	}, binary.BigEndian.Uint64(a[idOffset:]), nil
}

// withDefaults fills the zero fields of o from DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.Exchanges <= 0 {
		o.Exchanges = d.Exchanges
	}
	if o.Now == nil {
		o.Now = d.Now
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = d.DialTimeout
	}
	if o.ExchangeTimeout <= 0 {
		o.ExchangeTimeout = d.ExchangeTimeout
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = d.MaxBackoff
	}
	return o
}

// noReading is the error of a reading that ran out of time after attempts to connect, the
// last of which failed with err.
func noReading(attempts int, err error) error {
	return fmt.Errorf("no reading in time (%d attempts to connect; the last: %w)", attempts, err)
}
