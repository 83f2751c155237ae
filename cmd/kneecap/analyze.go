package main

import "context"

// cmdAnalyze is being built; see the issue tracker.
func cmdAnalyze(ctx context.Context, e *env, args []string) error {
	return usageError("analyze: not built yet")
}
