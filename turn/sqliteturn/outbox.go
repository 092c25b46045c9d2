package sqliteturn

import (
	"context"
	"database/sql"
	"slices"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/codec"
)

type outboxRow struct {
	e                               turn.OutboxEntry
	payload, status                 string
	attempts                        int64
	nextAttempt, created, completed sql.NullInt64
	worker, lastFailure, remoteRef  sql.NullString
	claimedAt                       sql.NullInt64
}

func (r *outboxRow) dest() []any {
	e := &r.e
	return []any{&e.OutboxID, &e.CommandID, &e.Destination, &r.payload, &e.IdempotencyKey, &r.status,
		&r.attempts, &r.nextAttempt, &r.created, &r.completed, &r.worker, &r.claimedAt,
		&r.lastFailure, &r.remoteRef}
}

func (r *outboxRow) record() (turn.OutboxRecord, error) {
	rec := turn.OutboxRecord{Entry: r.e, LastFailure: r.lastFailure.String, RemoteRef: r.remoteRef.String}
	e := &rec.Entry
	var err error
	if e.Status, err = codec.OutboxStatus(r.status); err != nil {
		return rec, err
	}
	if r.attempts < 0 || r.attempts > turn.MaxAttemptCount {
		return rec, codec.Corrupt("outbox %s has attempt count %d", e.OutboxID, r.attempts)
	}
	e.AttemptCount, e.Payload = int(r.attempts), readDoc(sql.NullString{String: r.payload, Valid: true})
	e.NextAttemptAt, e.CreatedAt, e.CompletedAt = fromMicros(r.nextAttempt), fromMicros(r.created), fromMicros(r.completed)
	if r.worker.Valid && r.claimedAt.Valid {
		rec.Claim = &turn.OutboxClaim{WorkerID: r.worker.String, ClaimedAt: fromMicros(r.claimedAt)}
	}
	return rec, nil
}

func collectOutbox(rows *sql.Rows, err error) ([]turn.OutboxRecord, error) {
	return collect(rows, err, (*outboxRow).dest, (*outboxRow).record)
}

// LoadOutbox implements turn.OutboxReader.
func (s *Backend) LoadOutbox(ctx context.Context, id turn.ID) (turn.OutboxRecord, error) {
	return readOne(ctx, s, func(st *statements) (turn.OutboxRecord, error) {
		var r outboxRow
		if err := scanOne(st.LoadOutbox.QueryRowContext(ctx, id), "outbox", id, r.dest()...); err != nil {
			return turn.OutboxRecord{}, err
		}
		return r.record()
	})
}

// OutboxForCommand implements turn.OutboxReader.
func (s *Backend) OutboxForCommand(ctx context.Context, cmd turn.ID) ([]turn.OutboxRecord, error) {
	return readOne(ctx, s, func(st *statements) ([]turn.OutboxRecord, error) {
		return collectOutbox(st.OutboxForCommand.QueryContext(ctx, cmd))
	})
}

// Enqueue implements turn.OutboxWriter.
func (s *Backend) Enqueue(ctx context.Context, e turn.OutboxEntry) error {
	return s.write(ctx, func(st *statements) error { return s.enqueue(st, e) })
}

func (s *Backend) enqueue(st *statements, e turn.OutboxEntry) error {
	_, err := st.Enqueue.ExecContext(bg, e.OutboxID, e.CommandID, e.Destination, codec.Doc(e.Payload), e.IdempotencyKey,
		int64(e.AttemptCount), micros(e.NextAttemptAt), micros(e.CreatedAt))
	return classify(err)
}

// ClaimDue implements turn.OutboxWriter.
func (s *Backend) ClaimDue(ctx context.Context, now time.Time, limit int, workerID string) ([]turn.OutboxEntry, error) {
	if limit == 0 {
		return []turn.OutboxEntry{}, nil
	}
	return writeOne(ctx, s, func(st *statements) ([]turn.OutboxEntry, error) {
		recs, err := collectOutbox(st.ClaimDue.QueryContext(bg, micros(now), int64(limit), workerID))
		if err != nil {
			return nil, err
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
		return entries, nil
	})
}

// settle runs one settlement of row id: the UPDATE carries the statuses it may leave; when it
// matches nothing, the row's status decides. accepted is the status in which a repeat is
// accepted unchanged ("" for none).
func (s *Backend) settle(ctx context.Context, id turn.ID, accepted turn.OutboxStatus, update func(*statements) *sql.Stmt, args ...any) error {
	return s.write(ctx, func(st *statements) error { return settle(st, id, accepted, update(st), args...) })
}

func settle(st *statements, id turn.ID, accepted turn.OutboxStatus, update *sql.Stmt, args ...any) error {
	n, err := affected(update.ExecContext(bg, append([]any{id}, args...)...))
	if err != nil || n == 1 {
		return err
	}
	var stored string
	if err := scanOne(st.LoadOutboxStatus.QueryRowContext(bg, id), "outbox", id, &stored); err != nil {
		return err
	}
	status, err := codec.OutboxStatus(stored)
	if err != nil {
		return err
	}
	if accepted != "" && status == accepted {
		return nil
	}
	return codec.Conflict("outbox %s is %q", id, status)
}

// MarkCompleted implements turn.OutboxWriter.
func (s *Backend) MarkCompleted(ctx context.Context, id turn.ID) error {
	return s.settle(ctx, id, turn.OutboxCompleted, func(st *statements) *sql.Stmt { return st.MarkCompleted }, micros(s.now()))
}

// MarkFailed implements turn.OutboxWriter.
func (s *Backend) MarkFailed(ctx context.Context, id turn.ID, reason string, retryAt time.Time) error {
	if !retryAt.IsZero() {
		return s.settle(ctx, id, "", func(st *statements) *sql.Stmt { return st.Reschedule }, micros(retryAt), reason)
	}
	return s.settle(ctx, id, turn.OutboxFailed, func(st *statements) *sql.Stmt { return st.MarkFailed }, reason, micros(s.now()))
}

// Reschedule implements turn.OutboxWriter.
func (s *Backend) Reschedule(ctx context.Context, id turn.ID, next time.Time) error {
	return s.settle(ctx, id, "", func(st *statements) *sql.Stmt { return st.Reschedule }, micros(next), nil)
}

// MarkOutcomeUnknown implements turn.OutboxWriter. A repeat on an outcome_unknown row only fills
// a missing remote reference.
func (s *Backend) MarkOutcomeUnknown(ctx context.Context, id turn.ID, remoteRef string) error {
	return s.write(ctx, func(st *statements) error {
		n, err := affected(st.MarkOutcomeUnknownRepeat.ExecContext(bg, id, codec.NullText(remoteRef)))
		if err != nil || n == 1 {
			return err
		}
		return settle(st, id, "", st.MarkOutcomeUnknown, codec.NullText(remoteRef))
	})
}

// ReleaseExpiredClaims implements turn.OutboxWriter.
func (s *Backend) ReleaseExpiredClaims(ctx context.Context, claimedBefore time.Time) ([]turn.ID, error) {
	return writeOne(ctx, s, func(st *statements) ([]turn.ID, error) {
		rows, err := st.ReleaseExpiredClaims.QueryContext(bg, micros(claimedBefore))
		ids, err := collect(rows, err, func(id *turn.ID) []any { return []any{id} }, asIs[turn.ID])
		if err != nil {
			return nil, err
		}
		slices.SortFunc(ids, turn.ID.Compare)
		return ids, nil
	})
}
