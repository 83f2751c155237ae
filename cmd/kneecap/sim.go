package main

import "context"

// cmdSim is being built; see the issue tracker.
func cmdSim(ctx context.Context, e *env, args []string) error {
	return usageError("sim: not built yet")
}
