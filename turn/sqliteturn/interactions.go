package sqliteturn

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

type interactionRow struct {
	doc          string
	status       string
	resolvedAt   sql.NullInt64
	optionID     sql.NullString
	resolvedBy   sql.NullString
	eventIDs     string
	failureCode  sql.NullString
	invalidation sql.NullString
	createdAt    int64
}

func (r *interactionRow) dest() []any {
	return []any{&r.doc, &r.status, &r.resolvedAt, &r.optionID, &r.resolvedBy, &r.eventIDs,
		&r.failureCode, &r.invalidation, &r.createdAt}
}

// record overlays the lifecycle columns on the card as created.
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
	it.ResolvedAt, it.ResolvedOptionID = fromMicros(r.resolvedAt), r.optionID.String
	it.CreatedAt = time.UnixMicro(r.createdAt).UTC()
	if !it.ExpiresAt.IsZero() {
		it.ExpiresAt = it.ExpiresAt.UTC()
	}
	if r.resolvedBy.Valid {
		if rec.ResolvedByTurn, err = turn.ParseID(r.resolvedBy.String); err != nil {
			return rec, codec.Corrupt("interaction resolved by a malformed turn id")
		}
	}
	var ids []turn.ID
	if err := codec.Unmarshal(r.eventIDs, &ids, "resolution event ids"); err != nil {
		return rec, err
	}
	if len(ids) > 0 {
		rec.ResolutionEventIDs = ids
	}
	rec.FailureCode = r.failureCode.String
	if r.invalidation.Valid {
		rec.Invalidation = new(turn.Invalidation)
		if err := codec.Unmarshal(r.invalidation.String, rec.Invalidation, "invalidation"); err != nil {
			return rec, err
		}
		rec.Invalidation.At = rec.Invalidation.At.UTC()
	}
	return rec, nil
}

func collectInteractions(rows *sql.Rows, err error) ([]turn.InteractionRecord, error) {
	return collect(rows, err, (*interactionRow).dest, (*interactionRow).record)
}

// loadInteraction reads the card with st (the reader pool's, or the writer's in a write
// transaction).
func loadInteraction(ctx context.Context, st *statements, account string, id turn.ID) (turn.InteractionRecord, error) {
	var r interactionRow
	if err := scanOne(st.LoadInteraction.QueryRowContext(ctx, account, id), "interaction", id, r.dest()...); err != nil {
		return turn.InteractionRecord{}, err
	}
	return r.record()
}

// LoadInteraction implements turn.InteractionReader.
func (s *Backend) LoadInteraction(ctx context.Context, account string, id turn.ID) (turn.InteractionRecord, error) {
	return readOne(ctx, s, func(st *statements) (turn.InteractionRecord, error) { return loadInteraction(ctx, st, account, id) })
}

// InteractionsForTurn implements turn.InteractionReader.
func (s *Backend) InteractionsForTurn(ctx context.Context, account string, id turn.ID) ([]turn.InteractionRecord, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.InteractionRecord, error) {
		return collectInteractions(st.InteractionsForTurn.QueryContext(ctx, account, id))
	})
}

// ListOpenForConversation implements turn.InteractionReader.
func (s *Backend) ListOpenForConversation(ctx context.Context, account string, conv turn.ID) ([]turn.InteractionRecord, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.InteractionRecord, error) {
		return collectInteractions(st.ListOpenForConversation.QueryContext(ctx, account, conv))
	})
}

// ListOpenForCase implements turn.InteractionReader.
func (s *Backend) ListOpenForCase(ctx context.Context, account string, key turn.CaseKey) ([]turn.InteractionRecord, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.InteractionRecord, error) {
		return collectInteractions(st.ListOpenForCase.QueryContext(ctx, account, key.Workflow, key.CaseID))
	})
}

// BlockingAnsweredAt implements turn.InteractionReader.
func (s *Backend) BlockingAnsweredAt(ctx context.Context, account string, key turn.CaseKey, rev turn.Revision) (bool, error) {
	return readOne(ctx, s, func(st *statements) (bool, error) {
		var yes bool
		err := st.BlockingAnsweredAt.QueryRowContext(ctx, account, key.Workflow, key.CaseID, int64(rev)).Scan(&yes)
		return yes, classify(err)
	})
}

// InsertInteraction implements turn.InteractionWriter.
func (s *Backend) InsertInteraction(ctx context.Context, it turn.Interaction) error {
	return s.write(ctx, func(st *statements) error {
		_, err := s.insert(st, it, false, s.now())
		return err
	})
}

// InsertReplacingBlocking implements turn.InteractionWriter.
func (s *Backend) InsertReplacingBlocking(ctx context.Context, it turn.Interaction) ([]turn.ID, error) {
	at := s.now()
	return writeOne(ctx, s, func(st *statements) ([]turn.ID, error) { return s.insert(st, it, true, at) })
}

// insert inserts a new active card and returns the ids it superseded. With replace, an active
// blocking occupant of the same case is first invalidated as superseded by the new card, so it
// leaves the slot before the new card meets the blocking index.
func (s *Backend) insert(st *statements, it turn.Interaction, replace bool, at time.Time) ([]turn.ID, error) {
	body, err := codec.Marshal(it)
	if err != nil {
		return nil, err
	}
	superseded := []turn.ID{}
	if replace && it.Blocking {
		inv, err := codec.Marshal(turn.Invalidation{Reason: turn.SupersededBy(it.ID), At: at})
		if err != nil {
			return nil, err
		}
		rows, err := st.InsertReplacingBlocking.QueryContext(bg, it.AccountID, it.CaseRef.Workflow, it.CaseRef.CaseID, inv)
		if superseded, err = collect(rows, err, func(id *turn.ID) []any { return []any{id} }, asIs[turn.ID]); err != nil {
			return nil, err
		}
	}
	_, err = st.InsertInteraction.ExecContext(bg, it.AccountID, it.ID, it.ConversationID, it.CaseRef.Workflow,
		it.CaseRef.CaseID, int64(it.CaseRef.ExpectedRevision), string(it.Kind), it.Blocking, it.RevisionIndependent,
		it.PayloadHash, body, micros(it.CreatedAt), micros(it.ExpiresAt))
	if err != nil {
		return nil, classify(err)
	}
	return superseded, nil
}

// BeginResolution implements turn.InteractionWriter: active -> resolving, recording the option,
// the turn and when. Only an active card can start resolving, so any other expected status is a
// conflict.
func (s *Backend) BeginResolution(ctx context.Context, account string, id turn.ID, expected turn.InteractionStatus, optionID string, resolvedBy turn.ID) (turn.InteractionRecord, error) {
	at := s.now()
	return writeOne(ctx, s, func(st *statements) (turn.InteractionRecord, error) {
		if expected == turn.InteractionActive {
			var r interactionRow
			err := st.BeginResolution.QueryRowContext(bg, account, id, codec.NullText(optionID), micros(at), codec.NullID(resolvedBy)).Scan(r.dest()...)
			if err == nil {
				return r.record()
			}
			if !errors.Is(err, sql.ErrNoRows) {
				return turn.InteractionRecord{}, classify(err)
			}
		}
		rec, err := loadInteraction(bg, st, account, id)
		if err != nil {
			return rec, err
		}
		return turn.InteractionRecord{}, codec.Conflict("interaction %s is %q; expected %q, and only active cards begin resolving",
			id, rec.Interaction.Status, expected)
	})
}

// FinishResolution implements turn.InteractionWriter.
func (s *Backend) FinishResolution(ctx context.Context, account string, id turn.ID, outcome turn.ResolutionOutcome) (turn.InteractionRecord, error) {
	return writeOne(ctx, s, func(st *statements) (turn.InteractionRecord, error) { return s.finish(st, account, id, outcome) })
}

// finish settles a resolving card. A repeat of a finish that already landed (same status, same
// data) is accepted and gives the record unchanged; anything else is a conflict.
func (s *Backend) finish(st *statements, account string, id turn.ID, o turn.ResolutionOutcome) (turn.InteractionRecord, error) {
	var res sql.Result
	var err error
	switch o.Kind {
	case turn.ResolutionResolved:
		res, err = st.FinishResolutionResolved.ExecContext(bg, account, id, idList(o.EventIDs))
	case turn.ResolutionFailed:
		res, err = st.FinishResolutionFailed.ExecContext(bg, account, id, o.Code)
	case turn.ResolutionRestoreActive:
		res, err = st.FinishResolutionRestoreActive.ExecContext(bg, account, id)
	default:
		return turn.InteractionRecord{}, turn.InvalidRecord("unknown resolution outcome %q", o.Kind)
	}
	n, err := affected(res, err)
	if err != nil {
		return turn.InteractionRecord{}, err
	}
	rec, err := loadInteraction(bg, st, account, id)
	if err != nil {
		return rec, err
	}
	if n == 0 && !o.Matches(rec) {
		return turn.InteractionRecord{}, codec.Conflict("interaction %s is %q and cannot settle as %q", id, rec.Interaction.Status, o.Kind)
	}
	return rec, nil
}

// InvalidateForCase implements turn.InteractionWriter.
func (s *Backend) InvalidateForCase(ctx context.Context, account string, key turn.CaseKey, rev turn.Revision, reason turn.InvalidationReason) ([]turn.ID, error) {
	at := s.now()
	return writeOne(ctx, s, func(st *statements) ([]turn.ID, error) { return s.invalidate(st, account, key, rev, reason, at) })
}

// invalidate retires the case's active cards bound to a revision other than rev.
func (s *Backend) invalidate(st *statements, account string, key turn.CaseKey, rev turn.Revision, reason turn.InvalidationReason, at time.Time) ([]turn.ID, error) {
	inv, err := codec.Marshal(turn.Invalidation{Reason: reason, NewRevision: &rev, At: at})
	if err != nil {
		return nil, err
	}
	return collectRetired(st.InvalidateForCase.QueryContext(bg, account, key.Workflow, key.CaseID, int64(rev), inv))
}

// InvalidateCaseCards implements turn.InteractionWriter: the operator's path, every active card
// of the case whatever its revision or independence.
func (s *Backend) InvalidateCaseCards(ctx context.Context, account string, key turn.CaseKey, reason turn.InvalidationReason) ([]turn.ID, error) {
	inv, err := codec.Marshal(turn.Invalidation{Reason: reason, At: s.now()})
	if err != nil {
		return nil, err
	}
	return writeOne(ctx, s, func(st *statements) ([]turn.ID, error) {
		return collectRetired(st.InvalidateCaseCards.QueryContext(bg, account, key.Workflow, key.CaseID, inv))
	})
}

type retiredCard struct {
	id turn.ID
	at int64
}

func (r *retiredCard) dest() []any { return []any{&r.id, &r.at} }

// collectRetired returns the ids in list order, (created_at, id): RETURNING has no order.
func collectRetired(rows *sql.Rows, err error) ([]turn.ID, error) {
	got, err := collect(rows, err, (*retiredCard).dest, asIs[retiredCard])
	if err != nil {
		return nil, err
	}
	slices.SortFunc(got, func(a, b retiredCard) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
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

type expiredCard struct {
	account string
	id      turn.ID
}

func (e *expiredCard) dest() []any { return []any{&e.account, &e.id} }

// ExpireDue implements turn.InteractionWriter: every active card due at now, across accounts,
// ordered by (account, id).
func (s *Backend) ExpireDue(ctx context.Context, now time.Time) ([]turn.ID, error) {
	return writeOne(ctx, s, func(st *statements) ([]turn.ID, error) {
		rows, err := st.ExpireDue.QueryContext(bg, micros(now))
		cards, err := collect(rows, err, (*expiredCard).dest, asIs[expiredCard])
		if err != nil {
			return nil, err
		}
		slices.SortFunc(cards, func(a, b expiredCard) int {
			if c := strings.Compare(a.account, b.account); c != 0 {
				return c
			}
			return a.id.Compare(b.id)
		})
		ids := make([]turn.ID, len(cards))
		for i, c := range cards {
			ids[i] = c.id
		}
		return ids, nil
	})
}
