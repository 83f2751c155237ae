// Package exit holds kneecap's exit statuses (DESIGN §9.2) and the error that carries one
// from the step that knows it (a launch step, the scenario grid, a command) to main, the only
// caller of os.Exit.
package exit

import (
	"errors"
	"fmt"
)

// Exit statuses (DESIGN §9.2).
const (
	OK          = 0
	Failure     = 1
	Usage       = 2
	Unreachable = 3
	// Regressed: kneecap compare --max-regression found a regression (everything was
	// written); CI tells it from a broken run (1) or bad input (2).
	Regressed   = 4
	Interrupted = 130
)

// Error carries a process exit status with an error. Err nil: the problems were printed
// already, and main prints nothing more (Printed).
type Error struct {
	Code int
	Err  error
	// See is where a command-line error sends the user: "kneecap sweep -h".
	See string
}

func (e *Error) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit %d", e.Code)
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// With wraps err so that main exits with code (nil stays nil).
func With(code int, err error) error {
	if err == nil {
		return nil
	}
	return &Error{Code: code, Err: err}
}

// Usagef is a usage or configuration error (exit 2).
func Usagef(format string, args ...any) error {
	return &Error{Code: Usage, Err: fmt.Errorf(format, args...)}
}

// Printed is the error of problems printed already: exit code, nothing more to say.
func Printed(code int) error { return &Error{Code: code} }

// IsPrinted reports whether err is an Error whose problems were printed already.
func IsPrinted(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Err == nil
}

// Code is the exit status of err: 0 for nil, an Error's code, else Failure.
func Code(err error) int {
	if err == nil {
		return OK
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return Failure
}
