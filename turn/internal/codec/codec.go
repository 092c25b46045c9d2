// Package codec holds the encodings pgturn and sqliteturn share: how a document is bound, how
// a record this code owns is encoded and decoded, how ids and text bind as NULL, and how stored
// enums and revisions are read back. What a stored value that does not decode means is decided
// here once: corrupt data (turn.ErrCorrupt), never bad input and never a guess.
package codec

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/steadhq/stead/turn"
)

// Doc returns the parameter of a document: its text, JSON null when it is empty.
func Doc(raw json.RawMessage) string {
	if len(bytes.TrimSpace(raw)) == 0 {
		return "null"
	}
	return string(raw)
}

// Marshal encodes a document this code owns (a record, an outcome, an invalidation).
func Marshal(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", turn.InvalidRecord("cannot encode %T: %v", v, err)
	}
	return string(b), nil
}

// Unmarshal decodes a stored document this code wrote; one that does not decode is corrupt data,
// not bad input.
func Unmarshal[T string | []byte](stored T, v any, what string) error {
	if err := json.Unmarshal([]byte(stored), v); err != nil {
		return Corrupt("%s does not decode: %v", what, err)
	}
	return nil
}

// Corrupt is an error wrapping turn.ErrCorrupt.
func Corrupt(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{turn.ErrCorrupt}, args...)...)
}

// NotFound is an error wrapping turn.ErrNotFound for what id.
func NotFound(what string, id any) error {
	return fmt.Errorf("%w: %s %v", turn.ErrNotFound, what, id)
}

// Conflict is an error wrapping turn.ErrConflict.
func Conflict(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{turn.ErrConflict}, args...)...)
}

// NullText binds "" as NULL.
func NullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// NullID binds the zero id as NULL.
func NullID(id turn.ID) any {
	if id.IsZero() {
		return nil
	}
	return id
}

// Revision reads a stored revision back; a negative one is corrupt.
func Revision(v int64, field string) (turn.Revision, error) {
	if v < 0 {
		return 0, Corrupt("stored %s is negative (%d)", field, v)
	}
	return turn.Revision(v), nil
}

// InteractionStatus reads a stored interaction status back; an unknown label is corrupt.
func InteractionStatus(s string) (turn.InteractionStatus, error) {
	return label(turn.InteractionStatus(s), "interaction status")
}

// Phase reads a stored turn phase back; an unknown label is corrupt.
func Phase(s string) (turn.Phase, error) { return label(turn.Phase(s), "turn phase") }

// JournalStatus reads a stored journal status back; an unknown label is corrupt.
func JournalStatus(s string) (turn.JournalStatus, error) {
	return label(turn.JournalStatus(s), "journal status")
}

// OutboxStatus reads a stored outbox status back; an unknown label is corrupt.
func OutboxStatus(s string) (turn.OutboxStatus, error) {
	return label(turn.OutboxStatus(s), "outbox status")
}

func label[E interface {
	~string
	Valid() bool
}](v E, what string) (E, error) {
	if !v.Valid() {
		return "", Corrupt("unknown %s %q", what, string(v))
	}
	return v, nil
}
