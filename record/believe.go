package record

// What of a record is believed (DESIGN §1, §7): which records' tokens count toward
// throughput.

// CountsTokens reports whether r's tokens count toward throughput (TokensInWindow, DESIGN
// §1): those of a request that succeeded, or that was cancelled with what it had received so
// far, at the drain or an interrupt (ErrCancelled) or by its user (ErrUserCancel, as a user
// who leaves mid-answer). A failure of any class counts none, whatever it received first: a
// stream that broke, timed out, was answered in error or ran past its bound is not believed,
// and a level where every request failed has no throughput.
func (r *Record) CountsTokens() bool {
	switch r.Status {
	case StatusOK, "": // "": a record built without a status (tests, hand-made fixtures)
		return true
	case StatusCancelled:
		return r.ErrorClass == ErrCancelled || r.ErrorClass == ErrUserCancel || r.ErrorClass == ""
	}
	return false
}
