package dbconflict

import (
	"errors"
	"strings"
	"testing"

	"github.com/steadhq/stead/internal/errs"
)

type driverErr struct{ msg string }

func (e *driverErr) Error() string { return e.msg }

// TestWording checks that every rule of the turn tables gets words of its own, that the
// message never carries the driver's text, and that the error still matches ErrConflict and
// hands out the driver's error.
func TestWording(t *testing.T) {
	cause := &driverErr{"UNIQUE constraint failed: turn_x.y (2067)"}
	tests := []struct {
		table, detail, want string
	}{
		{"turn_conversations", "turn_conversations_pkey", "a conversation with this id"},
		{"turn_turns", "turn_turns.account_id, turn_turns.turn_id", "a turn with this id"},
		{"turn_phases", "turn_phases_pkey", "phase is already recorded"},
		{"turn_interactions", "turn_interactions_one_open_blocking_per_case", "open blocking interaction"},
		{"turn_interactions", "turn_interactions.account_id, turn_interactions.workflow_key, turn_interactions.case_id", "open blocking interaction"},
		{"turn_interactions", "turn_interactions_pkey", "an interaction with this id"},
		{"turn_journal", "turn_journal_idempotency_key", "idempotency key"},
		{"turn_journal", "turn_journal_pkey", "a command with this id"},
		{"turn_events", "turn_events_by_id", "an event with this id"},
		{"turn_outbox", "turn_outbox.destination, turn_outbox.idempotency_key", "destination and idempotency key"},
		{"turn_outbox", "turn_outbox_pkey", "an outbox entry with this id"},
		{"turn_replays", "turn_replays_pkey", "a replay record"},
		{"", "", "a uniqueness rule refused the write"},
	}
	for _, tt := range tests {
		err := Unique(tt.table, tt.detail, cause)
		if !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "constraint") {
			t.Errorf("Unique(%q, %q) = %q, want it to say %q and no driver text", tt.table, tt.detail, err, tt.want)
		}
	}
	for _, err := range []error{Unique("turn_events", "", cause), Vanished(cause), Concurrent(cause)} {
		var d *driverErr
		if !errors.Is(err, errs.Conflict) || !errors.As(err, &d) || strings.Contains(err.Error(), cause.msg) {
			t.Errorf("%q: matches ErrConflict %v, holds the driver's error %v", err, errors.Is(err, errs.Conflict), errors.As(err, &d))
		}
	}
}
