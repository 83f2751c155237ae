package analysis

// cancelNotFreed warns that the server kept running requests whose users had left
// (statement: CancelResult.Statement).
func cancelNotFreed(statement string) warning {
	return newWarning(warnCancelNotFreed, "", "user cancels: %s; it kept generating for clients that had left, and its throughput includes that lost work", statement)
}

// cancelUnchecked warns that the run could not tell whether the server freed the slots of
// cancelled requests.
func cancelUnchecked(statement string) warning {
	return newWarning(warnCancelUnchecked, "", "user cancels: %s", statement)
}
