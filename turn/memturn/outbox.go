package memturn

import (
	"context"
	"slices"
	"time"

	"github.com/steadhq/stead/turn"
)

// LoadOutbox implements turn.OutboxReader.
func (s *Backend) LoadOutbox(ctx context.Context, id turn.ID) (turn.OutboxRecord, error) {
	if err := s.lock(ctx); err != nil {
		return turn.OutboxRecord{}, err
	}
	defer s.mu.Unlock()
	rec, ok := s.outbox[id]
	if !ok {
		return turn.OutboxRecord{}, notFound("outbox row", id)
	}
	return copyOutboxRecord(rec), nil
}

func sortOutbox[T any](xs []T, entry func(T) turn.OutboxEntry) {
	slices.SortFunc(xs, func(a, b T) int {
		ea, eb := entry(a), entry(b)
		return byTimeThenID(ea.CreatedAt, ea.OutboxID, eb.CreatedAt, eb.OutboxID)
	})
}

// OutboxForCommand implements turn.OutboxReader.
func (s *Backend) OutboxForCommand(ctx context.Context, command turn.ID) ([]turn.OutboxRecord, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []turn.OutboxRecord{}
	for _, id := range s.byCommand[command] {
		out = append(out, copyOutboxRecord(s.outbox[id]))
	}
	sortOutbox(out, func(r turn.OutboxRecord) turn.OutboxEntry { return r.Entry })
	return out, nil
}

// Enqueue implements turn.OutboxWriter.
func (s *Backend) Enqueue(ctx context.Context, e turn.OutboxEntry) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.enqueue(nil, e)
}

func (s *Backend) enqueue(u *undo, e turn.OutboxEntry) error {
	if _, ok := s.outbox[e.OutboxID]; ok {
		return conflict("outbox row %s exists", e.OutboxID)
	}
	k := outboxKey{e.Destination, e.IdempotencyKey}
	if _, ok := s.keys[k]; ok {
		return conflict("destination %q already has idempotency key %q", e.Destination, e.IdempotencyKey)
	}
	s.storeOutbox(u, turn.OutboxRecord{Entry: copyOutboxEntry(e)})
	put(u, s.keys, k, e.OutboxID)
	rows := s.byCommand[e.CommandID]
	put(u, s.byCommand, e.CommandID, append(slices.Clip(rows), e.OutboxID))
	return nil
}

// storeOutbox writes the row and keeps the live index in step.
func (s *Backend) storeOutbox(u *undo, rec turn.OutboxRecord) {
	id := rec.Entry.OutboxID
	if old, ok := s.outbox[id]; ok {
		if set := s.live[old.Entry.Status]; set != nil {
			del(u, set, id)
		}
	}
	put(u, s.outbox, id, rec)
	if set := s.live[rec.Entry.Status]; set != nil {
		put(u, set, id, struct{}{})
	}
}

// ClaimDue implements turn.OutboxWriter. One mutex guards every row, so two claimers can never
// take the same one.
func (s *Backend) ClaimDue(ctx context.Context, now time.Time, limit int, workerID string) ([]turn.OutboxEntry, error) {
	if err := s.faults.take(BeforeOutboxDispatch); err != nil {
		return nil, err
	}
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	type dueRow struct {
		created time.Time
		id      turn.ID
	}
	var due []dueRow
	for id := range s.live[turn.OutboxPending] {
		e := s.outbox[id].Entry
		if e.NextAttemptAt.IsZero() || !e.NextAttemptAt.After(now) {
			due = append(due, dueRow{e.CreatedAt, id})
		}
	}
	slices.SortFunc(due, func(a, b dueRow) int { return byTimeThenID(a.created, a.id, b.created, b.id) })
	out := []turn.OutboxEntry{}
	for _, d := range firstN(due, limit) {
		rec := s.outbox[d.id]
		if rec.Entry.AttemptCount >= turn.MaxAttemptCount {
			continue // cannot count another attempt; left for an operator
		}
		rec.Entry.Status = turn.OutboxDispatching
		rec.Entry.AttemptCount++
		rec.Claim = &turn.OutboxClaim{WorkerID: workerID, ClaimedAt: now}
		s.storeOutbox(nil, rec)
		out = append(out, copyOutboxEntry(rec.Entry))
	}
	return out, nil
}

// outboxChange decides a change to one row: the row to store, whether to store it, or a
// refusal.
type outboxChange func(rec turn.OutboxRecord) (turn.OutboxRecord, bool, error)

// settle is update for a settlement, which reports on a dispatch: it runs after the
// AfterOutboxDispatch fault point.
func (s *Backend) settle(ctx context.Context, id turn.ID, apply outboxChange) error {
	if err := s.faults.take(AfterOutboxDispatch); err != nil {
		return err
	}
	return s.update(ctx, id, apply)
}

// update loads the row under the lock and stores what apply returns when apply says to write.
func (s *Backend) update(ctx context.Context, id turn.ID, apply outboxChange) error {
	if err := s.lock(ctx); err != nil {
		return err
	}
	defer s.mu.Unlock()
	rec, ok := s.outbox[id]
	if !ok {
		return notFound("outbox row", id)
	}
	// Every refusal is decided before anything is written.
	next, write, err := apply(rec)
	if err != nil || !write {
		return err
	}
	s.storeOutbox(nil, next)
	return nil
}

// MarkCompleted implements turn.OutboxWriter.
func (s *Backend) MarkCompleted(ctx context.Context, id turn.ID) error {
	return s.settle(ctx, id, func(rec turn.OutboxRecord) (turn.OutboxRecord, bool, error) {
		switch rec.Entry.Status {
		case turn.OutboxCompleted:
			return rec, false, nil
		case turn.OutboxDispatching, turn.OutboxOutcomeUnknown:
			rec.Entry.Status = turn.OutboxCompleted
			rec.Entry.CompletedAt = s.now()
			rec.Claim = nil
			return rec, true, nil
		}
		return rec, false, conflict("outbox row %s is %s and cannot complete", id, rec.Entry.Status)
	})
}

// MarkFailed implements turn.OutboxWriter. A repeated definite failure keeps the first reason:
// the contract accepts the repeat without change, and the reason on record is the one the
// dispatcher saw first, which a retried report must not rewrite.
func (s *Backend) MarkFailed(ctx context.Context, id turn.ID, reason string, retryAt time.Time) error {
	return s.settle(ctx, id, func(rec turn.OutboxRecord) (turn.OutboxRecord, bool, error) {
		if !retryAt.IsZero() {
			if rec.Entry.Status.Terminal() {
				return rec, false, conflict("outbox row %s is %s and cannot be retried", id, rec.Entry.Status)
			}
			rec.Entry.Status = turn.OutboxPending
			rec.Entry.NextAttemptAt = retryAt
			rec.LastFailure = reason
			rec.Claim = nil
			return rec, true, nil
		}
		switch rec.Entry.Status {
		case turn.OutboxFailed:
			return rec, false, nil
		case turn.OutboxDispatching, turn.OutboxOutcomeUnknown:
			rec.Entry.Status = turn.OutboxFailed
			rec.Entry.CompletedAt = s.now()
			rec.LastFailure = reason
			rec.Claim = nil
			return rec, true, nil
		}
		return rec, false, conflict("outbox row %s is %s and cannot fail", id, rec.Entry.Status)
	})
}

// MarkOutcomeUnknown implements turn.OutboxWriter.
func (s *Backend) MarkOutcomeUnknown(ctx context.Context, id turn.ID, remoteRef string) error {
	return s.settle(ctx, id, func(rec turn.OutboxRecord) (turn.OutboxRecord, bool, error) {
		switch rec.Entry.Status {
		case turn.OutboxDispatching:
			rec.Entry.Status = turn.OutboxOutcomeUnknown
			rec.RemoteRef = remoteRef
			rec.Claim = nil
			return rec, true, nil
		case turn.OutboxOutcomeUnknown:
			if rec.RemoteRef != "" || remoteRef == "" {
				return rec, false, nil
			}
			rec.RemoteRef = remoteRef
			return rec, true, nil
		}
		return rec, false, conflict("outbox row %s is %s, not dispatching", id, rec.Entry.Status)
	})
}

// Reschedule implements turn.OutboxWriter.
func (s *Backend) Reschedule(ctx context.Context, id turn.ID, next time.Time) error {
	return s.update(ctx, id, func(rec turn.OutboxRecord) (turn.OutboxRecord, bool, error) {
		if rec.Entry.Status.Terminal() {
			return rec, false, conflict("outbox row %s is %s and cannot be rescheduled", id, rec.Entry.Status)
		}
		rec.Entry.Status = turn.OutboxPending
		rec.Entry.NextAttemptAt = next
		rec.Claim = nil
		return rec, true, nil
	})
}

// ReleaseExpiredClaims implements turn.OutboxWriter.
func (s *Backend) ReleaseExpiredClaims(ctx context.Context, claimedBefore time.Time) ([]turn.ID, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []turn.ID{}
	for id := range s.live[turn.OutboxDispatching] {
		rec := s.outbox[id]
		if rec.Claim != nil && rec.Claim.ClaimedAt.Before(claimedBefore) {
			out = append(out, id)
		}
	}
	for _, id := range out {
		rec := s.outbox[id]
		rec.Entry.Status = turn.OutboxPending
		rec.Entry.NextAttemptAt = time.Time{}
		rec.Claim = nil
		s.storeOutbox(nil, rec)
	}
	sortIDs(out)
	return out, nil
}
