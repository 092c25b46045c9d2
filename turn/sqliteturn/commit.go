package sqliteturn

import (
	"context"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/bundle"
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
	err := s.write(ctx, func(st *statements) error {
		// A retried transaction (the file was locked by another process) starts from scratch.
		r.EventIDs, r.InsertedInteractions, r.InvalidatedInteractions = r.EventIDs[:0], r.InsertedInteractions[:0], r.InvalidatedInteractions[:0]
		return s.apply(st, account, &b, at, &r)
	})
	if err != nil {
		return turn.Receipt{}, err
	}
	return r, nil
}

// apply runs the bundle's items in the contract's order; an error names the item that failed.
func (s *Backend) apply(st *statements, account string, b *turn.Bundle, at time.Time, r *turn.Receipt) error {
	return bundle.Walk(b, bundle.Steps{
		Complete: func(it bundle.Item, c turn.JournalCompletion) error {
			return it.Wrap(s.complete(st, account, c.CommandID, c.Outcome, at))
		},
		Append: func(it bundle.Item, batch turn.EventBatch) error {
			ids, err := s.appendEvents(st, batch)
			r.EventIDs = append(r.EventIDs, ids...)
			return it.Wrap(err)
		},
		Finish: func(it bundle.Item, f turn.InteractionFinish) error {
			_, err := s.finish(st, account, f.InteractionID, f.Outcome)
			return it.Wrap(err)
		},
		Invalidate: func(it bundle.Item, inv turn.CaseInvalidation) error {
			ids, err := s.invalidate(st, account, inv.CaseKey, inv.NewRevision, inv.Reason, at)
			r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
			return it.Wrap(err)
		},
		Insert: func(it bundle.Item, ins turn.InteractionInsert) error {
			ids, err := s.insert(st, ins.Interaction, ins.ReplaceBlocking, at)
			if err != nil {
				return it.Wrap(err)
			}
			r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
			r.InsertedInteractions = append(r.InsertedInteractions, ins.Interaction.ID)
			return nil
		},
		Enqueue: func(it bundle.Item, e turn.OutboxEntry) error { return it.Wrap(s.enqueue(st, e)) },
		Replay:  func(it bundle.Item, rec turn.ReplayRecord) error { return it.Wrap(s.putReplay(st, rec)) },
		Phase: func(it bundle.Item, p turn.PhaseUpdate) error {
			_, err := s.setPhase(st, account, p.TurnID, p.Phase, at)
			return it.Wrap(err)
		},
	})
}
