// Package doctor checks a PostgreSQL deployment of stead for executions that nothing left in
// the database will move: pending or running, with no queued message, no timer, no outbox or
// spawn row and no unfinished child. A step's work is durable only as rows — a message in the
// queue, an outbox row, a timer — so an execution without any of them waits for an event from
// outside (an application's Send) or for nothing at all.
//
// After a failover to an asynchronous replica, or a restore from a backup, the rows written in
// the last moments before it can be gone while the executions they belonged to survive at an
// older version: those executions sit "running" for ever and say nothing. Stranded lists them,
// as `stead doctor` does on the command line, so that an operator can compare them with what
// the application expected and re-send, retry or cancel.
//
// A pending execution on the list is certainly stuck (its start is gone); a running one may be
// waiting, as designed, for an event the application has not sent yet. Only executions quiet
// for longer than Options.QuietFor are listed, so that work in flight between two rows is not.
package doctor
