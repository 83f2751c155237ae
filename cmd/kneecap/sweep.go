package main

import "context"

// cmdSweep is being built; see the issue tracker.
func cmdSweep(ctx context.Context, e *env, args []string) error {
	return usageError("sweep: not built yet")
}
