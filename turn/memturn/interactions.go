package memturn

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/steadhq/stead/turn"
)

// LoadInteraction implements turn.InteractionReader.
func (s *Backend) LoadInteraction(ctx context.Context, account string, id turn.ID) (turn.InteractionRecord, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.InteractionRecord{}, err
	}
	defer s.mu.Unlock()
	if rec, ok := sh.interactions[id]; ok {
		return copyRecord(rec), nil
	}
	return turn.InteractionRecord{}, notFound("interaction", id)
}

func sortRecords(recs []turn.InteractionRecord) {
	slices.SortFunc(recs, func(a, b turn.InteractionRecord) int {
		return byTimeThenID(a.Interaction.CreatedAt, a.Interaction.ID, b.Interaction.CreatedAt, b.Interaction.ID)
	})
}

func (s *Backend) listOpen(ctx context.Context, account string, keep func(turn.Interaction) bool) ([]turn.InteractionRecord, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []turn.InteractionRecord{}
	for _, rec := range sh.interactions {
		if rec.Interaction.Status.Open() && keep(rec.Interaction) {
			out = append(out, copyRecord(rec))
		}
	}
	sortRecords(out)
	return out, nil
}

// InteractionsForTurn implements turn.InteractionReader.
func (s *Backend) InteractionsForTurn(ctx context.Context, account string, id turn.ID) ([]turn.InteractionRecord, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	out := []turn.InteractionRecord{}
	for _, rec := range sh.interactions {
		if rec.Interaction.CreatedByTurn == id || rec.ResolvedByTurn == id {
			out = append(out, copyRecord(rec))
		}
	}
	sortRecords(out)
	return out, nil
}

// ListOpenForConversation implements turn.InteractionReader.
func (s *Backend) ListOpenForConversation(ctx context.Context, account string, conversation turn.ID) ([]turn.InteractionRecord, error) {
	return s.listOpen(ctx, account, func(i turn.Interaction) bool { return i.ConversationID == conversation })
}

// ListOpenForCase implements turn.InteractionReader.
func (s *Backend) ListOpenForCase(ctx context.Context, account string, key turn.CaseKey) ([]turn.InteractionRecord, error) {
	return s.listOpen(ctx, account, func(i turn.Interaction) bool { return i.CaseRef.Key() == key })
}

// BlockingAnsweredAt implements turn.InteractionReader.
func (s *Backend) BlockingAnsweredAt(ctx context.Context, account string, key turn.CaseKey, revision turn.Revision) (bool, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return false, err
	}
	defer s.mu.Unlock()
	for _, id := range sh.byCase[key] {
		it := sh.interactions[id].Interaction
		if bound, ok := it.BoundRevision(); ok && bound == revision && it.Blocking && it.Status.Answered() {
			return true, nil
		}
	}
	return false, nil
}

// InsertInteraction implements turn.InteractionWriter.
func (s *Backend) InsertInteraction(ctx context.Context, it turn.Interaction) error {
	_, err := s.insertStandalone(ctx, it, false)
	return err
}

// InsertReplacingBlocking implements turn.InteractionWriter.
func (s *Backend) InsertReplacingBlocking(ctx context.Context, it turn.Interaction) ([]turn.ID, error) {
	return s.insertStandalone(ctx, it, true)
}

func (s *Backend) insertStandalone(ctx context.Context, it turn.Interaction, replace bool) ([]turn.ID, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	ids, err := s.insert(nil, it, replace, s.now())
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if err := s.faults.take(AfterInteractionPersistence); err != nil {
		return nil, err
	}
	return ids, nil
}

// insert is the rule shared by the standalone inserts and the bundle: the id first, then the
// blocking slot; a replacing insert supersedes an active occupant, never a resolving one.
func (s *Backend) insert(u *undo, it turn.Interaction, replace bool, now time.Time) ([]turn.ID, error) {
	sh := s.ensureShard(u, it.AccountID)
	if _, ok := sh.interactions[it.ID]; ok {
		return nil, conflict("interaction %s exists", it.ID)
	}
	key := it.CaseRef.Key()
	superseded := []turn.ID{}
	if it.Blocking {
		for _, id := range sh.byCase[key] {
			occ := sh.interactions[id]
			if !occ.Interaction.Blocking || !occ.Interaction.Status.Open() {
				continue
			}
			if !replace || occ.Interaction.Status != turn.InteractionActive {
				return nil, conflict("case %s/%s already has open blocking interaction %s", key.Workflow, key.CaseID, id)
			}
			occ.Interaction.Status = turn.InteractionInvalidated
			occ.Invalidation = &turn.Invalidation{Reason: turn.SupersededBy(it.ID), At: now}
			put(u, sh.interactions, id, occ)
			superseded = append(superseded, id)
		}
	}
	put(u, sh.interactions, it.ID, turn.InteractionRecord{Interaction: copyInteraction(it)})
	ids := sh.byCase[key]
	sh.byCase[key] = append(slices.Clip(ids), it.ID)
	u.add(func() {
		if len(ids) == 0 {
			delete(sh.byCase, key)
		} else {
			sh.byCase[key] = ids
		}
	})
	return superseded, nil
}

// BeginResolution implements turn.InteractionWriter.
func (s *Backend) BeginResolution(ctx context.Context, account string, id turn.ID, expected turn.InteractionStatus, optionID string, resolvedBy turn.ID) (turn.InteractionRecord, error) {
	sh, err := s.lockShard(ctx, account)
	if err != nil {
		return turn.InteractionRecord{}, err
	}
	defer s.mu.Unlock()
	rec, ok := sh.interactions[id]
	switch {
	case !ok:
		return turn.InteractionRecord{}, notFound("interaction", id)
	case expected != turn.InteractionActive:
		return turn.InteractionRecord{}, conflict("a resolution can only begin from active, not %s", expected)
	case rec.Interaction.Status != expected:
		return turn.InteractionRecord{}, conflict("interaction %s is %s, not %s", id, rec.Interaction.Status, expected)
	}
	rec.Interaction.Status = turn.InteractionResolving
	rec.Interaction.ResolvedOptionID = optionID
	rec.Interaction.ResolvedAt = s.now()
	rec.ResolvedByTurn = resolvedBy
	sh.interactions[id] = rec
	return copyRecord(rec), nil
}

// FinishResolution implements turn.InteractionWriter.
func (s *Backend) FinishResolution(ctx context.Context, account string, id turn.ID, outcome turn.ResolutionOutcome) (turn.InteractionRecord, error) {
	if err := s.lock(ctx); err != nil {
		return turn.InteractionRecord{}, err
	}
	defer s.mu.Unlock()
	return s.finish(nil, account, id, outcome)
}

// finish settles a resolving card. A card already settled exactly this way is accepted
// unchanged (a retried finish); so is restoring a card that is active with no answer.
func (s *Backend) finish(u *undo, account string, id turn.ID, outcome turn.ResolutionOutcome) (turn.InteractionRecord, error) {
	sh := s.shardOf(account)
	rec, ok := sh.interactions[id]
	if !ok {
		return turn.InteractionRecord{}, notFound("interaction", id)
	}
	if rec.Interaction.Status != turn.InteractionResolving {
		if outcome.Matches(rec) {
			return copyRecord(rec), nil
		}
		return turn.InteractionRecord{}, conflict("interaction %s is %s, not resolving", id, rec.Interaction.Status)
	}
	switch outcome.Kind {
	case turn.ResolutionResolved:
		rec.Interaction.Status = turn.InteractionResolved
		rec.ResolutionEventIDs = slices.Clone(outcome.EventIDs)
		rec.FailureCode = ""
	case turn.ResolutionFailed:
		rec.Interaction.Status = turn.InteractionFailed
		rec.FailureCode = outcome.Code
		rec.ResolutionEventIDs = nil
	case turn.ResolutionRestoreActive:
		rec.Interaction.Status = turn.InteractionActive
		rec.Interaction.ResolvedOptionID = ""
		rec.Interaction.ResolvedAt = time.Time{}
		rec.ResolvedByTurn = turn.ID{}
		rec.ResolutionEventIDs = nil
		rec.FailureCode = ""
	}
	put(u, sh.interactions, id, rec)
	return copyRecord(rec), nil
}

// InvalidateForCase implements turn.InteractionWriter.
func (s *Backend) InvalidateForCase(ctx context.Context, account string, key turn.CaseKey, newRevision turn.Revision, reason turn.InvalidationReason) ([]turn.ID, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	rev := newRevision
	return s.invalidate(nil, account, key, &rev, reason, s.now()), nil
}

// InvalidateCaseCards implements turn.InteractionWriter.
func (s *Backend) InvalidateCaseCards(ctx context.Context, account string, key turn.CaseKey, reason turn.InvalidationReason) ([]turn.ID, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.invalidate(nil, account, key, nil, reason, s.now()), nil
}

// invalidate retires the case's active cards. With a new revision (the revision sweep) it spares
// revision-independent cards and cards bound to that revision; without one (the operator's
// path) it takes every active card. Resolving cards are never touched.
func (s *Backend) invalidate(u *undo, account string, key turn.CaseKey, newRevision *turn.Revision, reason turn.InvalidationReason, now time.Time) []turn.ID {
	out := []turn.ID{}
	sh := s.shardOf(account)
	var hit []turn.InteractionRecord
	for _, id := range sh.byCase[key] {
		rec := sh.interactions[id]
		if rec.Interaction.Status != turn.InteractionActive {
			continue
		}
		if newRevision != nil && (rec.Interaction.RevisionIndependent || rec.Interaction.CaseRef.ExpectedRevision == *newRevision) {
			continue
		}
		hit = append(hit, rec)
	}
	sortRecords(hit)
	for _, rec := range hit {
		rec.Interaction.Status = turn.InteractionInvalidated
		inv := &turn.Invalidation{Reason: reason, At: now}
		if newRevision != nil {
			rev := *newRevision
			inv.NewRevision = &rev
		}
		rec.Invalidation = inv
		put(u, sh.interactions, rec.Interaction.ID, rec)
		out = append(out, rec.Interaction.ID)
	}
	return out
}

// ExpireDue implements turn.InteractionWriter.
func (s *Backend) ExpireDue(ctx context.Context, now time.Time) ([]turn.ID, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	type hit struct {
		account string
		id      turn.ID
	}
	var hits []hit
	for account, sh := range s.shards {
		for id, rec := range sh.interactions {
			if rec.Interaction.Status == turn.InteractionActive && rec.Interaction.IsExpired(now) {
				rec.Interaction.Status = turn.InteractionExpired
				sh.interactions[id] = rec
				hits = append(hits, hit{account, id})
			}
		}
	}
	slices.SortFunc(hits, func(a, b hit) int {
		if c := strings.Compare(a.account, b.account); c != 0 {
			return c
		}
		return a.id.Compare(b.id)
	})
	out := []turn.ID{}
	for _, h := range hits {
		out = append(out, h.id)
	}
	return out, nil
}
