package sqliteturn

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead/turn"
)

// Commit implements turn.CommitStore: it applies the bundle in one write transaction, in the
// contract's fixed order, each item by the very function its standalone method runs, stamped with
// one instant. The transaction is committed only after every item's rule accepted; on any error
// it is rolled back, and no other connection ever saw any of it, the records it modified
// included. A failed bundle never ends indeterminate: the error says nothing was written.
func (s *Backend) Commit(ctx context.Context, account string, b turn.Bundle) (turn.Receipt, error) {
	at := s.now()
	r := turn.Receipt{EventIDs: []turn.ID{}, InsertedInteractions: []turn.ID{}, InvalidatedInteractions: []turn.ID{}, CommittedAt: at}
	if b.IsEmpty() {
		return r, nil
	}
	err := s.write(ctx, func(q querier) error {
		// A retried transaction (the file was locked by another process) starts from scratch.
		r.EventIDs, r.InsertedInteractions, r.InvalidatedInteractions = r.EventIDs[:0], r.InsertedInteractions[:0], r.InvalidatedInteractions[:0]
		return s.apply(q, account, &b, at, &r)
	})
	if err != nil {
		return turn.Receipt{}, err
	}
	return r, nil
}

// apply runs the bundle's items in order; an error names the item that failed.
func (s *Backend) apply(q querier, account string, b *turn.Bundle, at time.Time, r *turn.Receipt) error {
	for i, c := range b.JournalCompletions {
		if err := s.complete(q, account, c.CommandID, c.Outcome, at); err != nil {
			return fmt.Errorf("bundle journal completion %d: %w", i, err)
		}
	}
	for i, batch := range b.Events {
		ids, err := s.appendEvents(q, batch)
		if err != nil {
			return fmt.Errorf("bundle event batch %d: %w", i, err)
		}
		r.EventIDs = append(r.EventIDs, ids...)
	}
	for i, f := range b.InteractionFinishes {
		if _, err := s.finish(q, account, f.InteractionID, f.Outcome); err != nil {
			return fmt.Errorf("bundle interaction finish %d: %w", i, err)
		}
	}
	// Invalidations run before inserts, so a retired card leaves the blocking slot before its
	// replacement takes it.
	for i, inv := range b.InteractionInvalidations {
		ids, err := s.invalidate(q, account, inv.CaseKey, inv.NewRevision, inv.Reason, at)
		if err != nil {
			return fmt.Errorf("bundle invalidation %d: %w", i, err)
		}
		r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
	}
	for i, ins := range b.InteractionInserts {
		ids, err := s.insert(q, ins.Interaction, ins.ReplaceBlocking, at)
		if err != nil {
			return fmt.Errorf("bundle interaction insert %d: %w", i, err)
		}
		r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
		r.InsertedInteractions = append(r.InsertedInteractions, ins.Interaction.ID)
	}
	for i, e := range b.OutboxEntries {
		if err := s.enqueue(q, e); err != nil {
			return fmt.Errorf("bundle outbox entry %d: %w", i, err)
		}
	}
	if b.ReplayRecord != nil {
		if err := s.putReplay(q, *b.ReplayRecord); err != nil {
			return fmt.Errorf("bundle replay record: %w", err)
		}
	}
	if p := b.TurnPhase; p != nil {
		if _, err := s.setPhase(q, account, p.TurnID, p.Phase, at); err != nil {
			return fmt.Errorf("bundle turn phase: %w", err)
		}
	}
	return nil
}
