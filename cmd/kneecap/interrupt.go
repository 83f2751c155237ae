package main

import (
	"context"
	"fmt"
)

// Commands with nothing in flight to drain — analyze, compare, merge — end at the first
// interrupt (DESIGN §7): their long computations (summaries, fits, bootstrap, charts, the
// shards' merge) stop at their next step, and nothing is written after it.

// untilInterrupt returns ctx, done also at the first interrupt (e.interrupt) and carrying it for
// interruptError, and the function that releases it.
func untilInterrupt(ctx context.Context, e *env) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if e.interrupt == nil {
		return ctx, cancel
	}
	ctx = context.WithValue(ctx, interruptKey{}, e.interrupt)
	release := context.AfterFunc(e.interrupt, cancel)
	if e.interrupt.Err() != nil {
		cancel() // AfterFunc calls it in a goroutine of its own: done now, not soon
	}
	return ctx, func() { release(); cancel() }
}

// interruptKey is the key of the interrupt untilInterrupt's context carries.
type interruptKey struct{}

// interruptError returns, once ctx is done or the interrupt it carries (untilInterrupt) is, the
// error that ends command cmd with exit 130 and says what it left (left: "nothing written");
// else nil. The interrupt is read itself: ctx is cancelled by a goroutine of its own, perhaps
// not yet when an interrupt has just arrived, and nothing may be written after one.
func interruptError(ctx context.Context, cmd, left string) error {
	interrupted := ctx.Err() != nil
	if in, ok := ctx.Value(interruptKey{}).(context.Context); ok && in.Err() != nil {
		interrupted = true
	}
	if !interrupted {
		return nil
	}
	return withCode(exitInterrupted, fmt.Errorf("%s interrupted: %s", cmd, left))
}

// nothingWritten is what an interrupted command left when it had written no file yet.
const nothingWritten = "nothing written"
