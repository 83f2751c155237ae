package main

import (
	"context"
	"fmt"
)

// Commands with nothing in flight to drain — analyze, compare, merge — end at the first
// interrupt (DESIGN §7): their long computations (summaries, fits, bootstrap, charts, the
// shards' merge) stop at their next step, and nothing is written after it.

// untilInterrupt returns ctx, done also at the first interrupt (e.interrupt), and the function
// that releases it.
func untilInterrupt(ctx context.Context, e *env) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	if e.interrupt == nil {
		return ctx, cancel
	}
	release := context.AfterFunc(e.interrupt, cancel)
	if e.interrupt.Err() != nil {
		cancel() // AfterFunc calls it in a goroutine of its own: done now, not soon
	}
	return ctx, func() { release(); cancel() }
}

// interruptError returns, once ctx is done, the error that ends command cmd with exit 130 and says
// what it left (left: "nothing written"); else nil.
func interruptError(ctx context.Context, cmd, left string) error {
	if ctx.Err() == nil {
		return nil
	}
	return withCode(exitInterrupted, fmt.Errorf("%s interrupted: %s", cmd, left))
}

// nothingWritten is what an interrupted command left when it had written no file yet.
const nothingWritten = "nothing written"
