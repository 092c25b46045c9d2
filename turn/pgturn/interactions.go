package pgturn

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
)

// The interaction document is the card as created and is never rewritten; the lifecycle columns
// own everything that moves, and a read overlays them on the document.
const interactionColumns = `interaction, status, resolved_at, resolved_option_id, resolved_by_turn,
    resolution_event_ids, failure_code, invalidation, created_at`

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
	if err := unmarshal(r.doc, &rec.Interaction, "interaction"); err != nil {
		return rec, err
	}
	it := &rec.Interaction
	var err error
	if it.Status, err = interactionStatus(r.status); err != nil {
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
		if err := unmarshal(r.invalidation, rec.Invalidation, "invalidation"); err != nil {
			return rec, err
		}
		rec.Invalidation.At = rec.Invalidation.At.UTC()
	}
	return rec, nil
}

func collectInteractions(rows pgx.Rows, err error) ([]turn.InteractionRecord, error) {
	return collect(rows, err, (*interactionRow).dest, (*interactionRow).record)
}

const sqlGetInteraction = `
SELECT ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND interaction_id = $2`

func (s *Store) getInteraction(ctx context.Context, q querier, account string, id turn.ID) (turn.InteractionRecord, error) {
	var r interactionRow
	if err := scanOne(q.QueryRow(ctx, s.sql(sqlGetInteraction), account, id), "interaction", id, r.dest()...); err != nil {
		return turn.InteractionRecord{}, err
	}
	return r.record()
}

const sqlListOpenForConversation = `
SELECT ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND conversation_id = $2 AND status IN ('active', 'resolving')
ORDER BY created_at, interaction_id`

func (s *Store) listOpenForConversation(ctx context.Context, q querier, account string, conv turn.ID) ([]turn.InteractionRecord, error) {
	return collectInteractions(q.Query(ctx, s.sql(sqlListOpenForConversation), account, conv))
}

const sqlListOpenForCase = `
SELECT ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND status IN ('active', 'resolving')
ORDER BY created_at, interaction_id`

func (s *Store) listOpenForCase(ctx context.Context, q querier, account string, key turn.CaseKey) ([]turn.InteractionRecord, error) {
	return collectInteractions(q.Query(ctx, s.sql(sqlListOpenForCase), account, key.Workflow, key.CaseID))
}

// A revision-independent card is bound to no revision, so it never answers for one.
const sqlBlockingAnsweredAt = `
SELECT EXISTS (
    SELECT 1 FROM {schema}turn_interactions
    WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND case_revision = $4
      AND blocking AND NOT revision_independent AND status IN ('resolved', 'declined', 'dismissed'))`

func (s *Store) blockingAnsweredAt(ctx context.Context, q querier, account string, key turn.CaseKey, rev turn.Revision) (bool, error) {
	var yes bool
	err := q.QueryRow(ctx, s.sql(sqlBlockingAnsweredAt), account, key.Workflow, key.CaseID, int64(rev)).Scan(&yes)
	return yes, classify(err)
}

// Insert relies on the partial unique index for the blocking slot: two concurrent inserts cannot
// both pass it, whatever either of them read before.
const sqlInsertInteraction = `
INSERT INTO {schema}turn_interactions (account_id, interaction_id, conversation_id, workflow_key,
    case_id, case_revision, kind, blocking, revision_independent, payload_hash, interaction, status,
    created_at, expires_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'active', $12, $13)`

// The replacing insert supersedes the case's active blocking occupant and takes its slot in one
// statement. The INSERT reads from the retiring UPDATE, so the occupant is retired before the new
// row meets the blocking index (which does not count a row this transaction has just retired).
// The UPDATE takes the occupant's row lock, so two replacements of one card serialise: the second
// re-reads the occupant as no longer active, supersedes nothing, and its INSERT then fails on the
// blocking index. A resolving occupant is never touched, so its slot holds and the INSERT fails
// too: an answer being processed is never replaced.
const sqlInsertReplacingInteraction = `
WITH superseded AS (
    UPDATE {schema}turn_interactions SET status = 'invalidated', invalidation = $14
    WHERE account_id = $1 AND workflow_key = $4 AND case_id = $5 AND blocking AND status = 'active'
    RETURNING interaction_id),
retired AS (SELECT array_agg(interaction_id) AS ids FROM superseded)
INSERT INTO {schema}turn_interactions (account_id, interaction_id, conversation_id, workflow_key,
    case_id, case_revision, kind, blocking, revision_independent, payload_hash, interaction, status,
    created_at, expires_at)
SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'active', $12, $13 FROM retired
RETURNING (SELECT ids FROM retired)`

// insertStep inserts a new active card. With replace, an active blocking occupant of the same
// case is first invalidated as superseded by the new card; the ids it invalidated go to
// *superseded.
func (s *Store) insertStep(what string, it turn.Interaction, replace bool, at time.Time, superseded *[]turn.ID) (step, error) {
	if it.Status != turn.InteractionActive {
		return step{}, turn.InvalidRecord("interaction %s inserted as %q, not active", it.ID, it.Status)
	}
	rev, err := revision(it.CaseRef.ExpectedRevision, "case revision")
	if err != nil {
		return step{}, err
	}
	// The document keeps times as the columns do: UTC, microseconds.
	it.CreatedAt = turn.ClockTime(it.CreatedAt)
	if !it.ExpiresAt.IsZero() {
		it.ExpiresAt = turn.ClockTime(it.ExpiresAt)
	}
	it.ResolvedAt, it.ResolvedOptionID = time.Time{}, "" // owned by the lifecycle columns
	body, err := marshal(it)
	if err != nil {
		return step{}, err
	}
	args := []any{it.AccountID, it.ID, it.ConversationID, it.CaseRef.Workflow, it.CaseRef.CaseID, rev,
		string(it.Kind), it.Blocking, it.RevisionIndependent, it.PayloadHash, body, it.CreatedAt,
		nullTime(it.ExpiresAt)}
	if !replace || !it.Blocking {
		return execStep(what, s.sql(sqlInsertInteraction), args, nil), nil
	}
	inv, err := marshal(turn.Invalidation{Reason: turn.SupersededBy(it.ID), At: at})
	if err != nil {
		return step{}, err
	}
	return step{what: what, sql: s.sql(sqlInsertReplacingInteraction), args: append(args, inv),
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

// Only an active card begins resolving, and only when the caller expected it active ($6); the
// second branch returns the card as it stood when it did not move.
const sqlBeginResolution = `
WITH begun AS (
    UPDATE {schema}turn_interactions
    SET status = 'resolving', resolved_option_id = $3, resolved_at = $4, resolved_by_turn = $5
    WHERE account_id = $1 AND interaction_id = $2 AND status = 'active' AND $6::boolean
    RETURNING ` + interactionColumns + `)
SELECT true, ` + interactionColumns + ` FROM begun
UNION ALL
SELECT false, ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND interaction_id = $2 AND NOT EXISTS (SELECT 1 FROM begun)`

// beginStep accepts an answer into *out: active -> resolving, recording the option, the turn and
// when. Only an active card can start resolving, so any other expected status is a conflict.
func (s *Store) beginStep(account string, id turn.ID, expected turn.InteractionStatus, option string, by turn.ID, at time.Time, out *turn.InteractionRecord) step {
	args := []any{account, id, nullText(option), at, nullID(by), expected == turn.InteractionActive}
	return step{sql: s.sql(sqlBeginResolution), args: args, read: func(r results) error {
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
			return conflict("interaction %s is %q; expected %q, and only active cards begin resolving", id, rec.Interaction.Status, expected)
		}
		*out = rec
		return nil
	}}
}

// Each settlement moves a resolving card; when it matches nothing, the second branch returns the
// card as it stood, for the rule to tell a repeat from a conflict.
const finishTail = `
SELECT true, ` + interactionColumns + ` FROM settled
UNION ALL
SELECT false, ` + interactionColumns + ` FROM {schema}turn_interactions
WHERE account_id = $1 AND interaction_id = $2 AND NOT EXISTS (SELECT 1 FROM settled)`

const sqlFinishResolved = `
WITH settled AS (
    UPDATE {schema}turn_interactions
    SET status = 'resolved', resolution_event_ids = $3::uuid[], failure_code = NULL
    WHERE account_id = $1 AND interaction_id = $2 AND status = 'resolving'
    RETURNING ` + interactionColumns + `)` + finishTail

const sqlFinishFailed = `
WITH settled AS (
    UPDATE {schema}turn_interactions
    SET status = 'failed', failure_code = $3, resolution_event_ids = '{}'
    WHERE account_id = $1 AND interaction_id = $2 AND status = 'resolving'
    RETURNING ` + interactionColumns + `)` + finishTail

const sqlFinishRestoreActive = `
WITH settled AS (
    UPDATE {schema}turn_interactions
    SET status = 'active', resolution_event_ids = '{}', failure_code = NULL, resolved_by_turn = NULL,
        resolved_option_id = NULL, resolved_at = NULL
    WHERE account_id = $1 AND interaction_id = $2 AND status = 'resolving'
    RETURNING ` + interactionColumns + `)` + finishTail

// finishStep settles a resolving card into *out. A repeat of a finish that already landed (same
// status, same data) is accepted and gives the record unchanged; anything else is a conflict.
func (s *Store) finishStep(what, account string, id turn.ID, o turn.ResolutionOutcome, out *turn.InteractionRecord) (step, error) {
	var sql string
	args := []any{account, id}
	switch o.Kind {
	case turn.ResolutionResolved:
		sql = sqlFinishResolved
		args = append(args, idTexts(o.EventIDs))
	case turn.ResolutionFailed:
		sql = sqlFinishFailed
		args = append(args, o.Code)
	case turn.ResolutionRestoreActive:
		sql = sqlFinishRestoreActive
	default:
		return step{}, turn.InvalidRecord("unknown resolution outcome %q", o.Kind)
	}
	return step{what: what, sql: s.sql(sql), args: args, read: func(r results) error {
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
			return conflict("interaction %s is %q and cannot settle as %q", id, rec.Interaction.Status, o.Kind)
		}
		if out != nil {
			*out = rec
		}
		return nil
	}}, nil
}

const sqlInvalidateForCase = `
UPDATE {schema}turn_interactions SET status = 'invalidated', invalidation = $5
WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND status = 'active'
  AND NOT revision_independent AND case_revision <> $4
RETURNING interaction_id, created_at`

const sqlInvalidateCaseCards = `
UPDATE {schema}turn_interactions SET status = 'invalidated', invalidation = $4
WHERE account_id = $1 AND workflow_key = $2 AND case_id = $3 AND status = 'active'
RETURNING interaction_id, created_at`

// invalidateStep retires the case's active cards bound to a revision other than rev into
// *retired. Selection and write are one statement, so two commits moving the same case serialise
// on the row locks and agree on which of them retired a card: the second finds it no longer
// active.
func (s *Store) invalidateStep(what, account string, key turn.CaseKey, rev turn.Revision, reason turn.InvalidationReason, at time.Time, retired *[]turn.ID) (step, error) {
	r, err := revision(rev, "new revision")
	if err != nil {
		return step{}, err
	}
	inv, err := marshal(turn.Invalidation{Reason: reason, NewRevision: &rev, At: at})
	if err != nil {
		return step{}, err
	}
	return retireStep(what, s.sql(sqlInvalidateForCase), []any{account, key.Workflow, key.CaseID, r, inv}, retired), nil
}

// invalidateCardsStep is the operator's path: every active card of the case, whatever its
// revision or independence.
func (s *Store) invalidateCardsStep(account string, key turn.CaseKey, reason turn.InvalidationReason, at time.Time, retired *[]turn.ID) (step, error) {
	inv, err := marshal(turn.Invalidation{Reason: reason, At: at})
	if err != nil {
		return step{}, err
	}
	return retireStep("", s.sql(sqlInvalidateCaseCards), []any{account, key.Workflow, key.CaseID, inv}, retired), nil
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

// The expiry sweep crosses tenants; nothing but the status is recorded.
const sqlExpireDue = `
UPDATE {schema}turn_interactions SET status = 'expired'
WHERE status = 'active' AND expires_at IS NOT NULL AND expires_at <= $1
RETURNING account_id, interaction_id`

// expireStep expires every active card due at now, across accounts, into *out ordered by
// (account, id).
func (s *Store) expireStep(now time.Time, out *[]expiredCard) step {
	return step{sql: s.sql(sqlExpireDue), args: []any{now}, read: func(r results) error {
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
