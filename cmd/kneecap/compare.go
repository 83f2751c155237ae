package main

import "context"

// cmdCompare is being built; see the issue tracker.
func cmdCompare(ctx context.Context, e *env, args []string) error {
	return usageError("compare: not built yet")
}
