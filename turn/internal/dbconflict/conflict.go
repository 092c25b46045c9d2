// Package dbconflict words the conflicts the SQL turn backends meet in the contract's terms: which
// record already exists, which rule refused the write, never the database's own message (which
// names tables and columns and reads as an internal failure to whoever sees it).
package dbconflict

import (
	"strings"

	"github.com/steadhq/stead/internal/errs"
)

// Error is a conflict a database rule raised: Error names the rule in the contract's words, and
// the driver's error stays in the chain (errors.As) without being part of the message. It
// matches stead.ErrConflict.
type Error struct {
	Msg   string
	Cause error
}

func (e *Error) Error() string { return errs.Conflict.Error() + ": " + e.Msg }

// Unwrap gives the sentinel and the driver's error.
func (e *Error) Unwrap() []error { return []error{errs.Conflict, e.Cause} }

// Unique returns the conflict of a uniqueness rule of table: detail is what the database says
// of the rule, a constraint name (PostgreSQL) or the list of its columns (SQLite), and tells the
// rules of one table apart. The tables and their rules are the same on both backends.
func Unique(table, detail string, cause error) error {
	return &Error{Msg: uniqueMessage(table, detail), Cause: cause}
}

func uniqueMessage(table, detail string) string {
	has := func(s string) bool { return strings.Contains(detail, s) }
	switch table {
	case "turn_conversations":
		return "a conversation with this id already exists in the account"
	case "turn_turns":
		return "a turn with this id already exists in the account"
	case "turn_phases":
		return "the turn's phase is already recorded"
	case "turn_interactions":
		if has("case") || has("blocking") {
			return "the case already has an open blocking interaction"
		}
		return "an interaction with this id already exists in the account"
	case "turn_journal":
		if has("idempotency") {
			return "a command with this idempotency key already exists in the account"
		}
		return "a command with this id already exists in the account"
	case "turn_events":
		return "an event with this id already exists in the account"
	case "turn_outbox":
		if has("idempotency") || has("destination") {
			return "an outbox entry with this destination and idempotency key already exists"
		}
		return "an outbox entry with this id already exists"
	case "turn_replays":
		return "a replay record for this turn already exists"
	}
	return "a uniqueness rule refused the write"
}

// Vanished returns the conflict of a foreign key: the record the write belongs to was deleted
// meanwhile.
func Vanished(cause error) error {
	return &Error{Msg: "the record this write belongs to no longer exists", Cause: cause}
}

// Concurrent returns the conflict of a serialization failure or a deadlock: another writer
// changed the same records first, and the database rolled this write back.
func Concurrent(cause error) error {
	return &Error{Msg: "a concurrent writer changed the same records first; nothing was written", Cause: cause}
}
