package turn

// The enums below are stored as their snake_case labels, which are also the values PostgreSQL
// partial indexes and WHERE clauses compare against; a backend that reads back a label it does
// not know reports ErrCorrupt rather than guessing.

// InteractionStatus is the lifecycle of an interaction (a card shown to the user).
type InteractionStatus string

// The interaction statuses.
const (
	InteractionActive      InteractionStatus = "active"
	InteractionResolving   InteractionStatus = "resolving"
	InteractionResolved    InteractionStatus = "resolved"
	InteractionDeclined    InteractionStatus = "declined"
	InteractionDismissed   InteractionStatus = "dismissed"
	InteractionInvalidated InteractionStatus = "invalidated"
	InteractionExpired     InteractionStatus = "expired"
	InteractionFailed      InteractionStatus = "failed"
)

// Valid reports whether s is one of the statuses above.
func (s InteractionStatus) Valid() bool {
	switch s {
	case InteractionActive, InteractionResolving, InteractionResolved, InteractionDeclined,
		InteractionDismissed, InteractionInvalidated, InteractionExpired, InteractionFailed:
		return true
	}
	return false
}

// Open reports whether the status holds a blocking slot: active or resolving.
func (s InteractionStatus) Open() bool {
	return s == InteractionActive || s == InteractionResolving
}

// Terminal reports whether the interaction is settled for good (every valid status but the open
// ones).
func (s InteractionStatus) Terminal() bool { return s.Valid() && !s.Open() }

// Answered reports whether the user answered the card: resolved, declined or dismissed.
// Invalidated and expired cards were never answered.
func (s InteractionStatus) Answered() bool {
	return s == InteractionResolved || s == InteractionDeclined || s == InteractionDismissed
}

// CanTransitionTo reports whether the lifecycle allows s -> next: active may go to any other
// status; resolving may go to resolved, failed, or back to active; nothing else moves.
func (s InteractionStatus) CanTransitionTo(next InteractionStatus) bool {
	switch s {
	case InteractionActive:
		return next.Valid() && next != InteractionActive
	case InteractionResolving:
		return next == InteractionResolved || next == InteractionFailed || next == InteractionActive
	}
	return false
}

// InteractionKind says how a card is answered.
type InteractionKind string

// The interaction kinds.
const (
	KindBoolean                InteractionKind = "boolean"
	KindSingleSelect           InteractionKind = "single_select"
	KindMultiSelect            InteractionKind = "multi_select"
	KindFreeform               InteractionKind = "freeform"
	KindReviewChanges          InteractionKind = "review_changes"
	KindConfirmCommand         InteractionKind = "confirm_command"
	KindSelectTarget           InteractionKind = "select_target"
	KindResolveValidationError InteractionKind = "resolve_validation_error"
	KindReauthenticate         InteractionKind = "reauthenticate"
	KindExternalSignature      InteractionKind = "external_signature"
)

// Valid reports whether k is one of the kinds above.
func (k InteractionKind) Valid() bool {
	switch k {
	case KindBoolean, KindSingleSelect, KindMultiSelect, KindFreeform, KindReviewChanges,
		KindConfirmCommand, KindSelectTarget, KindResolveValidationError, KindReauthenticate,
		KindExternalSignature:
		return true
	}
	return false
}

// Phase is the crash-recovery marker of a turn: how far its processing got.
type Phase string

// The turn phases, in the order a turn normally passes them.
const (
	PhaseReceived    Phase = "received"
	PhaseInterpreted Phase = "interpreted"
	PhaseReduced     Phase = "reduced"
	PhaseExecuting   Phase = "executing"
	PhaseCommitted   Phase = "committed"
	PhaseComposed    Phase = "composed"
	PhaseDelivered   Phase = "delivered"
	PhaseFailed      Phase = "failed"
)

// Valid reports whether p is one of the phases above.
func (p Phase) Valid() bool {
	switch p {
	case PhaseReceived, PhaseInterpreted, PhaseReduced, PhaseExecuting, PhaseCommitted,
		PhaseComposed, PhaseDelivered, PhaseFailed:
		return true
	}
	return false
}

// Terminal reports whether the turn is finished: delivered or failed. A terminal phase can be
// set again (a retried write) but never left.
func (p Phase) Terminal() bool { return p == PhaseDelivered || p == PhaseFailed }

// JournalStatus is the state of a command in the idempotency journal.
type JournalStatus string

// The journal statuses.
const (
	JournalPending              JournalStatus = "pending"
	JournalAwaitingConfirmation JournalStatus = "awaiting_confirmation"
	JournalExecuting            JournalStatus = "executing"
	JournalCommitted            JournalStatus = "committed"
	JournalFailed               JournalStatus = "failed"
	JournalOutcomeUnknown       JournalStatus = "outcome_unknown"
)

// Valid reports whether s is one of the statuses above.
func (s JournalStatus) Valid() bool {
	switch s {
	case JournalPending, JournalAwaitingConfirmation, JournalExecuting, JournalCommitted,
		JournalFailed, JournalOutcomeUnknown:
		return true
	}
	return false
}

// Terminal reports whether the command is settled: committed or failed.
func (s JournalStatus) Terminal() bool { return s == JournalCommitted || s == JournalFailed }

// Resumable reports whether a crashed turn should resume the command: pending or executing.
// An entry awaiting confirmation is not work yet; it waits for the user's answer.
func (s JournalStatus) Resumable() bool { return s == JournalPending || s == JournalExecuting }

// CanTransitionTo reports whether the journal allows s -> next:
//   - pending or awaiting_confirmation -> executing;
//   - pending, awaiting_confirmation or executing -> committed, failed or outcome_unknown;
//   - outcome_unknown -> committed or failed.
//
// Everything else is illegal, including staying put.
func (s JournalStatus) CanTransitionTo(next JournalStatus) bool {
	switch next {
	case JournalExecuting:
		return s == JournalPending || s == JournalAwaitingConfirmation
	case JournalCommitted, JournalFailed:
		return s == JournalPending || s == JournalAwaitingConfirmation || s == JournalExecuting ||
			s == JournalOutcomeUnknown
	case JournalOutcomeUnknown:
		return s == JournalPending || s == JournalAwaitingConfirmation || s == JournalExecuting
	}
	return false
}

// Sources returns every status from which next is reachable, in declaration order. A backend
// puts this list in the WHERE clause of the write that moves an entry to next.
func (next JournalStatus) Sources() []JournalStatus {
	var out []JournalStatus
	for _, s := range []JournalStatus{JournalPending, JournalAwaitingConfirmation, JournalExecuting,
		JournalCommitted, JournalFailed, JournalOutcomeUnknown} {
		if s.CanTransitionTo(next) {
			out = append(out, s)
		}
	}
	return out
}

// OutboxStatus is the dispatch state of an outbox row.
type OutboxStatus string

// The outbox statuses.
const (
	OutboxPending        OutboxStatus = "pending"
	OutboxDispatching    OutboxStatus = "dispatching"
	OutboxOutcomeUnknown OutboxStatus = "outcome_unknown"
	OutboxCompleted      OutboxStatus = "completed"
	OutboxFailed         OutboxStatus = "failed"
)

// Valid reports whether s is one of the statuses above.
func (s OutboxStatus) Valid() bool {
	switch s {
	case OutboxPending, OutboxDispatching, OutboxOutcomeUnknown, OutboxCompleted, OutboxFailed:
		return true
	}
	return false
}

// Terminal reports whether the row is settled: completed or failed.
func (s OutboxStatus) Terminal() bool { return s == OutboxCompleted || s == OutboxFailed }

// CanTransitionTo reports whether dispatch allows s -> next:
//   - pending -> dispatching (a claim), and pending -> pending (a reschedule or retry only moves
//     the due time);
//   - dispatching -> pending, outcome_unknown, completed or failed;
//   - outcome_unknown -> completed, failed or pending.
func (s OutboxStatus) CanTransitionTo(next OutboxStatus) bool {
	switch s {
	case OutboxPending:
		return next == OutboxDispatching || next == OutboxPending
	case OutboxDispatching:
		return next == OutboxPending || next == OutboxOutcomeUnknown || next == OutboxCompleted ||
			next == OutboxFailed
	case OutboxOutcomeUnknown:
		return next == OutboxCompleted || next == OutboxFailed || next == OutboxPending
	}
	return false
}
