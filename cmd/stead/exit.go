package main

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

// codedError ends a command with its own exit code; its message is the one line on stderr.
type codedError struct {
	code int
	error
}

func (e codedError) Unwrap() error { return e.error }

func refusedf(format string, args ...any) error {
	return codedError{exitRefused, fmt.Errorf(format, args...)}
}
