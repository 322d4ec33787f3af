// Package badinput is the error of a request iolab refuses as asked — a
// flag, a plan key, a command line — before anything runs: the command
// exits 2, as a usage error, whichever package found it.
package badinput

import (
	"errors"
	"fmt"
)

// Error is a refused request; its message names what was wrong and what
// would be accepted.
type Error struct{ Err error }

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// Errorf is an Error of the formatted message.
func Errorf(format string, args ...any) error {
	return &Error{Err: fmt.Errorf(format, args...)}
}

// Is says whether err is, or wraps, an Error.
func Is(err error) bool {
	var e *Error
	return errors.As(err, &e)
}
