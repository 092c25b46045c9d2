package pgturn

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

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
	if e.Status, err = codec.OutboxStatus(r.status); err != nil {
		return rec, err
	}
	if r.attempts < 0 {
		return rec, codec.Corrupt("outbox %s has attempt count %d", e.OutboxID, r.attempts)
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

func (s *Backend) loadOutbox(ctx context.Context, q querier, id turn.ID) (turn.OutboxRecord, error) {
	var r outboxRow
	if err := scanOne(q.QueryRow(ctx, s.st.LoadOutbox, id), "outbox", id, r.dest()...); err != nil {
		return turn.OutboxRecord{}, err
	}
	return r.record()
}

func (s *Backend) outboxForCommand(ctx context.Context, q querier, cmd turn.ID) ([]turn.OutboxRecord, error) {
	return collectOutbox(q.Query(ctx, s.st.OutboxForCommand, cmd))
}

func (s *Backend) enqueueStep(what string, e turn.OutboxEntry) step {
	args := []any{e.OutboxID, e.CommandID, e.Destination, codec.Doc(e.Payload), e.IdempotencyKey, int32(e.AttemptCount),
		nullTime(e.NextAttemptAt), e.CreatedAt}
	return execStep(what, s.st.Enqueue, args, nil)
}

func (s *Backend) claimStep(now time.Time, limit int, worker string, out *[]turn.OutboxEntry) step {
	return step{sql: s.st.ClaimDue, args: []any{now, int64(limit), worker}, read: func(r results) error {
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

// settleStep runs a settlement of row id. accepted is the status in which a repeat is accepted
// unchanged ("" for none).
func (s *Backend) settleStep(id turn.ID, accepted turn.OutboxStatus, sql string, args ...any) step {
	return step{sql: sql, args: append([]any{id}, args...), read: func(r results) error {
		var moved bool
		var st *string
		if err := r.QueryRow().Scan(&moved, &st); err != nil {
			return classify(err)
		}
		if moved {
			return nil
		}
		if st == nil {
			return codec.NotFound("outbox", id)
		}
		status, err := codec.OutboxStatus(*st)
		if err != nil {
			return err
		}
		if accepted != "" && status == accepted {
			return nil
		}
		return codec.Conflict("outbox %s is %q", id, status)
	}}
}

func (s *Backend) markCompletedStep(id turn.ID, at time.Time) step {
	return s.settleStep(id, turn.OutboxCompleted, s.st.MarkCompleted, at)
}

func (s *Backend) markFailedStep(id turn.ID, reason string, retryAt, at time.Time) step {
	if !retryAt.IsZero() {
		return s.settleStep(id, "", s.st.Reschedule, retryAt, reason)
	}
	return s.settleStep(id, turn.OutboxFailed, s.st.MarkFailed, reason, at)
}

func (s *Backend) rescheduleStep(id turn.ID, next time.Time) step {
	return s.settleStep(id, "", s.st.Reschedule, nullTime(next), nil)
}

func (s *Backend) markOutcomeUnknownStep(id turn.ID, remoteRef string) step {
	return s.settleStep(id, "", s.st.MarkOutcomeUnknown, codec.NullText(remoteRef))
}

func (s *Backend) releaseStep(before time.Time, out *[]turn.ID) step {
	return step{sql: s.st.ReleaseExpiredClaims, args: []any{before}, read: func(r results) error {
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
