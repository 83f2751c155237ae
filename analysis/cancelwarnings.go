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
