package pgturn

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

type interactionRow struct {
	doc          []byte
	status       string
	resolvedAt   *time.Time
	optionID     *string
	resolvedBy   *turn.ID
	eventIDs     []turn.ID
	failureCode  *string
	invalidation []byte
	createdAt    time.Time
}

func (r *interactionRow) dest() []any {
	return []any{&r.doc, &r.status, &r.resolvedAt, &r.optionID, &r.resolvedBy, &r.eventIDs,
		&r.failureCode, &r.invalidation, &r.createdAt}
}

func (r *interactionRow) record() (turn.InteractionRecord, error) {
	var rec turn.InteractionRecord
	if err := codec.Unmarshal(r.doc, &rec.Interaction, "interaction"); err != nil {
		return rec, err
	}
	it := &rec.Interaction
	var err error
	if it.Status, err = codec.InteractionStatus(r.status); err != nil {
		return rec, err
	}
	it.ResolvedAt, it.ResolvedOptionID = utc(r.resolvedAt), text(r.optionID)
	it.CreatedAt = r.createdAt.UTC()
	if !it.ExpiresAt.IsZero() {
		it.ExpiresAt = it.ExpiresAt.UTC()
	}
	if r.resolvedBy != nil {
		rec.ResolvedByTurn = *r.resolvedBy
	}
	if len(r.eventIDs) > 0 {
		rec.ResolutionEventIDs = r.eventIDs
	}
	rec.FailureCode = text(r.failureCode)
	if r.invalidation != nil {
		rec.Invalidation = new(turn.Invalidation)
		if err := codec.Unmarshal(r.invalidation, rec.Invalidation, "invalidation"); err != nil {
			return rec, err
		}
		rec.Invalidation.At = rec.Invalidation.At.UTC()
	}
	return rec, nil
}

func collectInteractions(rows pgx.Rows, err error) ([]turn.InteractionRecord, error) {
	return collect(rows, err, (*interactionRow).dest, (*interactionRow).record)
}

func (s *Backend) getInteraction(ctx context.Context, q querier, account string, id turn.ID) (turn.InteractionRecord, error) {
	var r interactionRow
	if err := scanOne(q.QueryRow(ctx, s.st.LoadInteraction, account, id), "interaction", id, r.dest()...); err != nil {
		return turn.InteractionRecord{}, err
	}
	return r.record()
}

func (s *Backend) interactionsForTurn(ctx context.Context, q querier, account string, id turn.ID) ([]turn.InteractionRecord, error) {
	return collectInteractions(q.Query(ctx, s.st.InteractionsForTurn, account, id.String(), id))
}

func (s *Backend) listOpenForConversation(ctx context.Context, q querier, account string, conv turn.ID) ([]turn.InteractionRecord, error) {
	return collectInteractions(q.Query(ctx, s.st.ListOpenForConversation, account, conv))
}

func (s *Backend) listOpenForCase(ctx context.Context, q querier, account string, key turn.CaseKey) ([]turn.InteractionRecord, error) {
	return collectInteractions(q.Query(ctx, s.st.ListOpenForCase, account, key.Workflow, key.CaseID))
}

func (s *Backend) blockingAnsweredAt(ctx context.Context, q querier, account string, key turn.CaseKey, rev turn.Revision) (bool, error) {
	var yes bool
	err := q.QueryRow(ctx, s.st.BlockingAnsweredAt, account, key.Workflow, key.CaseID, int64(rev)).Scan(&yes)
	return yes, classify(err)
}

// insertStep inserts a new active card. With replace, an active blocking occupant of the same
// case is first invalidated as superseded by the new card; the ids it invalidated go to
// *superseded.
func (s *Backend) insertStep(what string, it turn.Interaction, replace bool, at time.Time, superseded *[]turn.ID) (step, error) {
	body, err := codec.Marshal(it)
	if err != nil {
		return step{}, err
	}
	args := []any{it.AccountID, it.ID, it.ConversationID, it.CaseRef.Workflow, it.CaseRef.CaseID, int64(it.CaseRef.ExpectedRevision),
		string(it.Kind), it.Blocking, it.RevisionIndependent, it.PayloadHash, body, it.CreatedAt,
		nullTime(it.ExpiresAt)}
	if !replace || !it.Blocking {
		return execStep(what, s.st.InsertInteraction, args, nil), nil
	}
	inv, err := codec.Marshal(turn.Invalidation{Reason: turn.SupersededBy(it.ID), At: at})
	if err != nil {
		return step{}, err
	}
	return step{what: what, sql: s.st.InsertReplacingBlocking, args: append(args, inv),
		read: func(r results) error {
			var ids []turn.ID
			if err := r.QueryRow().Scan(&ids); err != nil {
				return classify(err)
			}
			if superseded != nil {
				*superseded = ids
			}
			return nil
		}}, nil
}

// beginStep accepts an answer into *out: active -> resolving, recording the option, the turn and
// when. Only an active card can start resolving, so any other expected status is a conflict.
func (s *Backend) beginStep(account string, id turn.ID, expected turn.InteractionStatus, option string, by turn.ID, at time.Time, out *turn.InteractionRecord) step {
	args := []any{account, id, codec.NullText(option), at, codec.NullID(by), expected == turn.InteractionActive}
	return step{sql: s.st.BeginResolution, args: args, read: func(r results) error {
		var begun bool
		var row interactionRow
		if err := scanOne(r.QueryRow(), "interaction", id, append([]any{&begun}, row.dest()...)...); err != nil {
			return err
		}
		rec, err := row.record()
		if err != nil {
			return err
		}
		if !begun {
			return codec.Conflict("interaction %s is %q; expected %q, and only active cards begin resolving", id, rec.Interaction.Status, expected)
		}
		*out = rec
		return nil
	}}
}

// finishStep settles a resolving card into *out. A repeat of a finish that already landed (same
// status, same data) is accepted and gives the record unchanged; anything else is a conflict.
func (s *Backend) finishStep(what, account string, id turn.ID, o turn.ResolutionOutcome, out *turn.InteractionRecord) (step, error) {
	var sql string
	args := []any{account, id}
	switch o.Kind {
	case turn.ResolutionResolved:
		sql = s.st.FinishResolutionResolved
		args = append(args, idTexts(o.EventIDs))
	case turn.ResolutionFailed:
		sql = s.st.FinishResolutionFailed
		args = append(args, o.Code)
	case turn.ResolutionRestoreActive:
		sql = s.st.FinishResolutionRestoreActive
	default:
		return step{}, turn.InvalidRecord("unknown resolution outcome %q", o.Kind)
	}
	return step{what: what, sql: sql, args: args, read: func(r results) error {
		var settled bool
		var row interactionRow
		if err := scanOne(r.QueryRow(), "interaction", id, append([]any{&settled}, row.dest()...)...); err != nil {
			return err
		}
		rec, err := row.record()
		if err != nil {
			return err
		}
		if !settled && !o.Matches(rec) {
			return codec.Conflict("interaction %s is %q and cannot settle as %q", id, rec.Interaction.Status, o.Kind)
		}
		if out != nil {
			*out = rec
		}
		return nil
	}}, nil
}

// invalidateStep retires the case's active cards bound to a revision other than rev into
// *retired. Selection and write are one statement, so two commits moving the same case serialise
// on the row locks and agree on which of them retired a card: the second finds it no longer
// active.
func (s *Backend) invalidateStep(what, account string, key turn.CaseKey, rev turn.Revision, reason turn.InvalidationReason, at time.Time, retired *[]turn.ID) (step, error) {
	inv, err := codec.Marshal(turn.Invalidation{Reason: reason, NewRevision: &rev, At: at})
	if err != nil {
		return step{}, err
	}
	return retireStep(what, s.st.InvalidateForCase, []any{account, key.Workflow, key.CaseID, int64(rev), inv}, retired), nil
}

// invalidateCardsStep is the operator's path: every active card of the case, whatever its
// revision or independence.
func (s *Backend) invalidateCardsStep(account string, key turn.CaseKey, reason turn.InvalidationReason, at time.Time, retired *[]turn.ID) (step, error) {
	inv, err := codec.Marshal(turn.Invalidation{Reason: reason, At: at})
	if err != nil {
		return step{}, err
	}
	return retireStep("", s.st.InvalidateCaseCards, []any{account, key.Workflow, key.CaseID, inv}, retired), nil
}

func retireStep(what, sql string, args []any, retired *[]turn.ID) step {
	return step{what: what, sql: sql, args: args, read: func(r results) error {
		ids, err := collectRetired(r.Query())
		if err == nil && retired != nil {
			*retired = ids
		}
		return err
	}}
}

type retiredCard struct {
	id turn.ID
	at time.Time
}

func (r *retiredCard) dest() []any { return []any{&r.id, &r.at} }

// collectRetired returns the ids in list order, (created_at, id): RETURNING has no order.
func collectRetired(rows pgx.Rows, err error) ([]turn.ID, error) {
	got, err := collect(rows, err, (*retiredCard).dest, asIs[retiredCard])
	if err != nil {
		return nil, err
	}
	slices.SortFunc(got, func(a, b retiredCard) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.id.Compare(b.id)
	})
	ids := make([]turn.ID, len(got))
	for i, r := range got {
		ids[i] = r.id
	}
	return ids, nil
}

// expireStep expires every active card due at now, across accounts, into *out ordered by
// (account, id).
func (s *Backend) expireStep(now time.Time, out *[]expiredCard) step {
	return step{sql: s.st.ExpireDue, args: []any{now}, read: func(r results) error {
		rows, err := r.Query()
		cards, err := collect(rows, err, (*expiredCard).dest, asIs[expiredCard])
		if err != nil {
			return err
		}
		slices.SortFunc(cards, func(a, b expiredCard) int {
			if c := strings.Compare(a.account, b.account); c != 0 {
				return c
			}
			return a.id.Compare(b.id)
		})
		*out = cards
		return nil
	}}
}

type expiredCard struct {
	account string
	id      turn.ID
}

func (e *expiredCard) dest() []any { return []any{&e.account, &e.id} }
