package analysis

// cancelNotFreed warns that the server's running count suggests it kept running requests
// whose users had left
// (statement: CancelResult.Statement).
func cancelNotFreed(statement string) warning {
	return newWarning(warnCancelNotFreed, "", "user cancels: %s, and its throughput may include that lost work", statement)
}

// cancelUnchecked warns that the run could not tell whether the server freed the slots of
// cancelled requests.
func cancelUnchecked(statement string) warning {
	return newWarning(warnCancelUnchecked, "", "user cancels: %s", statement)
}

// cancelTTFTLowerBound warns that at levels (levelsAt: "concurrency 32 (12 of 240 requests)")
// more than ttftCensoredMax of the TTFT population left before a first token, so their
// TTFT percentiles are lower bounds.
func cancelTTFTLowerBound(levels string) warning {
	return newWarning(warnCancelTTFTLowerBound, "", "user cancels: TTFT percentiles are lower bounds at %s cancelled before a first token: the users left the slowest requests, whose TTFT is not measured, so the TTFT blow-up, the SLO point and the capacity may read better than the server is", levels)
}
