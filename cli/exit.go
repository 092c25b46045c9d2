package cli

import "fmt"

// Exit codes a script can act on. Every command exits 0 on success, 1 on an error and 2 on a
// usage mistake; the control and purge commands add two more.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitRefused  = 3 // some executions (or trees) refused the command; the others took it
	exitNoTarget = 4 // the selection matched no execution
)

// ExitError ends a command with its own exit code; its message is the one line on stderr.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }

func refusedf(format string, args ...any) error {
	return &ExitError{exitRefused, fmt.Errorf(format, args...)}
}
