package pgturn

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
)

const outboxColumns = `outbox_id, command_id, destination, payload, idempotency_key, status, attempt_count,
    next_attempt_at, created_at, completed_at, claim_worker_id, claim_taken_at, last_failure, remote_ref`

type outboxRow struct {
	e           turn.OutboxEntry
	payload     []byte
	status      string
	attempts    int32
	nextAttempt *time.Time
	completed   *time.Time
	worker      *string
	claimedAt   *time.Time
	lastFailure *string
	remoteRef   *string
}

func (r *outboxRow) dest() []any {
	e := &r.e
	return []any{&e.OutboxID, &e.CommandID, &e.Destination, &r.payload, &e.IdempotencyKey, &r.status,
		&r.attempts, &r.nextAttempt, &e.CreatedAt, &r.completed, &r.worker, &r.claimedAt,
		&r.lastFailure, &r.remoteRef}
}

func (r *outboxRow) record() (turn.OutboxRecord, error) {
	rec := turn.OutboxRecord{Entry: r.e, LastFailure: text(r.lastFailure), RemoteRef: text(r.remoteRef)}
	e := &rec.Entry
	var err error
	if e.Status, err = outboxStatus(r.status); err != nil {
		return rec, err
	}
	if r.attempts < 0 {
		return rec, corrupt("outbox %s has attempt count %d", e.OutboxID, r.attempts)
	}
	e.AttemptCount, e.Payload = int(r.attempts), readDoc(r.payload)
	e.NextAttemptAt, e.CreatedAt, e.CompletedAt = utc(r.nextAttempt), e.CreatedAt.UTC(), utc(r.completed)
	if r.worker != nil && r.claimedAt != nil {
		rec.Claim = &turn.OutboxClaim{WorkerID: *r.worker, ClaimedAt: r.claimedAt.UTC()}
	}
	return rec, nil
}

func collectOutbox(rows pgx.Rows, err error) ([]turn.OutboxRecord, error) {
	return collect(rows, err, (*outboxRow).dest, (*outboxRow).record)
}

const sqlLoadOutbox = `SELECT ` + outboxColumns + ` FROM {schema}turn_outbox WHERE outbox_id = $1`

func (s *Store) loadOutbox(ctx context.Context, q querier, id turn.ID) (turn.OutboxRecord, error) {
	var r outboxRow
	if err := scanOne(q.QueryRow(ctx, s.sql(sqlLoadOutbox), id), "outbox", id, r.dest()...); err != nil {
		return turn.OutboxRecord{}, err
	}
	return r.record()
}

const sqlOutboxForCommand = `
SELECT ` + outboxColumns + ` FROM {schema}turn_outbox WHERE command_id = $1 ORDER BY created_at, outbox_id`

func (s *Store) outboxForCommand(ctx context.Context, q querier, cmd turn.ID) ([]turn.OutboxRecord, error) {
	return collectOutbox(q.Query(ctx, s.sql(sqlOutboxForCommand), cmd))
}

const sqlEnqueue = `
INSERT INTO {schema}turn_outbox (outbox_id, command_id, destination, payload, idempotency_key, status,
    attempt_count, next_attempt_at, created_at)
VALUES ($1, $2, $3, $4, $5, 'pending', $6, $7, $8)`

func (s *Store) enqueueStep(what string, e turn.OutboxEntry) (step, error) {
	if e.Status != turn.OutboxPending {
		return step{}, turn.InvalidRecord("outbox %s enqueued as %q, not pending", e.OutboxID, e.Status)
	}
	if e.AttemptCount < 0 || e.AttemptCount > turn.MaxAttemptCount {
		return step{}, turn.InvalidRecord("outbox %s: attempt count %d out of range", e.OutboxID, e.AttemptCount)
	}
	args := []any{e.OutboxID, e.CommandID, e.Destination, doc(e.Payload), e.IdempotencyKey, int32(e.AttemptCount),
		nullTime(e.NextAttemptAt), turn.ClockTime(e.CreatedAt)}
	return execStep(what, s.sql(sqlEnqueue), args, nil), nil
}

// The claim locks the due rows it selects and skips rows another claimer holds, so concurrent
// dispatchers split the due rows between them and never wait on each other. A row another claimer
// has just moved to dispatching fails the re-check of the WHERE clause and is not taken.
const sqlClaimDue = `
WITH due AS (
    SELECT outbox_id FROM {schema}turn_outbox
    WHERE status = 'pending' AND (next_attempt_at IS NULL OR next_attempt_at <= $1)
    ORDER BY created_at, outbox_id
    LIMIT $2
    FOR UPDATE SKIP LOCKED)
UPDATE {schema}turn_outbox o
SET status = 'dispatching', attempt_count = o.attempt_count + 1, claim_worker_id = $3, claim_taken_at = $1
FROM due WHERE o.outbox_id = due.outbox_id
RETURNING o.outbox_id, o.command_id, o.destination, o.payload, o.idempotency_key, o.status,
    o.attempt_count, o.next_attempt_at, o.created_at, o.completed_at, o.claim_worker_id,
    o.claim_taken_at, o.last_failure, o.remote_ref`

func (s *Store) claimStep(now time.Time, limit int, worker string, out *[]turn.OutboxEntry) step {
	return step{sql: s.sql(sqlClaimDue), args: []any{now, clampLimit(limit), worker}, read: func(r results) error {
		recs, err := collectOutbox(r.Query())
		if err != nil {
			return err
		}
		slices.SortFunc(recs, func(a, b turn.OutboxRecord) int { // RETURNING has no order
			if c := a.Entry.CreatedAt.Compare(b.Entry.CreatedAt); c != 0 {
				return c
			}
			return a.Entry.OutboxID.Compare(b.Entry.OutboxID)
		})
		entries := make([]turn.OutboxEntry, len(recs))
		for i, rec := range recs {
			entries[i] = rec.Entry
		}
		*out = entries
		return nil
	}}
}

// Every settlement is one statement: the UPDATE carries the statuses it may leave in its WHERE
// clause, and the same statement returns the status the row had (its snapshot, NULL for no row),
// which is all the rule needs when the UPDATE matched nothing. A refused settlement changes
// nothing at all.
const settledTail = `
SELECT EXISTS (SELECT 1 FROM moved), (SELECT status FROM {schema}turn_outbox WHERE outbox_id = $1)`

const sqlMarkCompleted = `
WITH moved AS (
    UPDATE {schema}turn_outbox
    SET status = 'completed', completed_at = $2, claim_worker_id = NULL, claim_taken_at = NULL
    WHERE outbox_id = $1 AND status IN ('dispatching', 'outcome_unknown')
    RETURNING 1)` + settledTail

const sqlRetry = `
WITH moved AS (
    UPDATE {schema}turn_outbox
    SET status = 'pending', next_attempt_at = $2, last_failure = COALESCE($3, last_failure),
        claim_worker_id = NULL, claim_taken_at = NULL
    WHERE outbox_id = $1 AND status IN ('pending', 'dispatching', 'outcome_unknown')
    RETURNING 1)` + settledTail

// A definite failure settles the row; repeating it on a failed row is accepted and keeps the
// first reason (the original adapter overwrote it; the contract says a repeat changes nothing).
const sqlMarkFailed = `
WITH moved AS (
    UPDATE {schema}turn_outbox
    SET status = 'failed', completed_at = $3, last_failure = $2, claim_worker_id = NULL, claim_taken_at = NULL
    WHERE outbox_id = $1 AND status IN ('dispatching', 'outcome_unknown')
    RETURNING 1)` + settledTail

// A dispatching row moves to outcome_unknown; a repeat on an outcome_unknown row only fills a
// missing remote reference. The two UPDATEs match exclusive statuses of the same snapshot, so at
// most one of them touches the row.
const sqlMarkOutcomeUnknown = `
WITH unknown AS (
    UPDATE {schema}turn_outbox
    SET status = 'outcome_unknown', remote_ref = $2, claim_worker_id = NULL, claim_taken_at = NULL
    WHERE outbox_id = $1 AND status = 'dispatching'
    RETURNING 1),
filled AS (
    UPDATE {schema}turn_outbox SET remote_ref = COALESCE(remote_ref, $2)
    WHERE outbox_id = $1 AND status = 'outcome_unknown'
    RETURNING 1),
moved AS (SELECT 1 FROM unknown UNION ALL SELECT 1 FROM filled)` + settledTail

// settleStep runs a settlement of row id. accepted is the status in which a repeat is accepted
// unchanged ("" for none).
func (s *Store) settleStep(id turn.ID, accepted turn.OutboxStatus, sql string, args ...any) step {
	return step{sql: s.sql(sql), args: append([]any{id}, args...), read: func(r results) error {
		var moved bool
		var st *string
		if err := r.QueryRow().Scan(&moved, &st); err != nil {
			return classify(err)
		}
		if moved {
			return nil
		}
		if st == nil {
			return notFound("outbox", id)
		}
		status, err := outboxStatus(*st)
		if err != nil {
			return err
		}
		if accepted != "" && status == accepted {
			return nil
		}
		return conflict("outbox %s is %q", id, status)
	}}
}

func (s *Store) markCompletedStep(id turn.ID, at time.Time) step {
	return s.settleStep(id, turn.OutboxCompleted, sqlMarkCompleted, at)
}

func (s *Store) markFailedStep(id turn.ID, reason string, retryAt, at time.Time) step {
	if !retryAt.IsZero() {
		return s.settleStep(id, "", sqlRetry, turn.ClockTime(retryAt), reason)
	}
	return s.settleStep(id, turn.OutboxFailed, sqlMarkFailed, reason, at)
}

func (s *Store) rescheduleStep(id turn.ID, next time.Time) step {
	return s.settleStep(id, "", sqlRetry, nullTime(next), nil)
}

func (s *Store) markOutcomeUnknownStep(id turn.ID, remoteRef string) step {
	return s.settleStep(id, "", sqlMarkOutcomeUnknown, nullText(remoteRef))
}

const sqlReleaseExpiredClaims = `
UPDATE {schema}turn_outbox
SET status = 'pending', next_attempt_at = NULL, claim_worker_id = NULL, claim_taken_at = NULL
WHERE status = 'dispatching' AND claim_taken_at < $1
RETURNING outbox_id`

func (s *Store) releaseStep(before time.Time, out *[]turn.ID) step {
	return step{sql: s.sql(sqlReleaseExpiredClaims), args: []any{turn.ClockTime(before)}, read: func(r results) error {
		rows, err := r.Query()
		if err != nil {
			return classify(err)
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[turn.ID])
		if err != nil {
			return classify(err)
		}
		slices.SortFunc(ids, turn.ID.Compare)
		*out = ids
		return nil
	}}
}
