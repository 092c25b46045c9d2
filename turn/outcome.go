package turn

import (
	"context"
	"encoding/json"
	"errors"
)

// RevisionConflictError is an execution failure: the case moved on before the command ran.
type RevisionConflictError struct{ Current Revision }

func (e *RevisionConflictError) Error() string { return "stead: turn: case revision conflict" }

// RejectedError is an execution failure: the workflow refused the command. Rejection is the
// refusal document the journal records.
type RejectedError struct{ Rejection json.RawMessage }

func (e *RejectedError) Error() string { return "stead: turn: command rejected" }

// OutcomeUnknownError is an execution failure whose effect is unknown (the remote side may have
// acted): the journal records it for reconciliation.
type OutcomeUnknownError struct {
	AttemptID string
	RemoteRef string
	Reason    string
}

func (e *OutcomeUnknownError) Error() string { return "stead: turn: outcome unknown: " + e.Reason }

// OutcomeFromError maps the failure of executing a command to the outcome the journal records:
//   - *RevisionConflictError: revision_conflict; *RejectedError: rejected;
//   - *OutcomeUnknownError: outcome_unknown, copied;
//   - context.DeadlineExceeded (the execution ran out of time): outcome_unknown with the command id
//     as attempt id and reason "execution_timeout" — the effect may have happened;
//   - a store error: failed with "store.<kind>" (not_found, conflict, unavailable, timeout,
//     invalid, corrupt) or "store.<code>" for an *Error;
//   - anything else: failed "other".
func OutcomeFromError(command ID, err error) JournalOutcome {
	var rc *RevisionConflictError
	var rj *RejectedError
	var ou *OutcomeUnknownError
	var coded *Error
	switch {
	case errors.As(err, &rc):
		return JournalOutcome{Kind: OutcomeRevisionConflict, CurrentRevision: rc.Current}
	case errors.As(err, &rj):
		return JournalOutcome{Kind: OutcomeRejected, Rejection: rj.Rejection}
	case errors.As(err, &ou):
		return JournalOutcome{Kind: OutcomeUnknown, AttemptID: ou.AttemptID, RemoteRef: ou.RemoteRef, Reason: ou.Reason}
	case errors.Is(err, context.DeadlineExceeded):
		return JournalOutcome{Kind: OutcomeUnknown, AttemptID: command.String(), Reason: "execution_timeout"}
	case errors.As(err, &coded):
		return Failed("store." + coded.Code)
	}
	for _, s := range []struct {
		err  error
		code string
	}{
		{ErrNotFound, "store.not_found"}, {ErrConflict, "store.conflict"},
		{ErrUnavailable, "store.unavailable"}, {ErrTimeout, "store.timeout"},
		{ErrInvalid, "store.invalid"}, {ErrCorrupt, "store.corrupt"},
	} {
		if errors.Is(err, s.err) {
			return Failed(s.code)
		}
	}
	return Failed("other")
}

// FailCommand records the failure of executing a command: CompleteCommand with
// OutcomeFromError(command, cause).
func FailCommand(ctx context.Context, w JournalWriter, account string, command ID, cause error) error {
	return w.CompleteCommand(ctx, account, command, OutcomeFromError(command, cause))
}
