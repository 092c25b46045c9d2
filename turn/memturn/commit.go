package memturn

import (
	"context"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/bundle"
)

// Commit implements turn.CommitStore. It applies the bundle (checked by turn.PrepareCommit) under
// the backend's lock in the fixed order of turn.Bundle through the same rule functions as the
// standalone methods, recording an undo step for every change. On any error (a refused item, or a failure
// armed with FailNext at a bundle point) the undo log is replayed newest first, which leaves the
// state exactly as found: records the bundle modified, rows it created, the event sequence
// counter and any account shard it created.
func (s *Backend) Commit(ctx context.Context, account string, b turn.Bundle) (turn.Receipt, error) {
	if err := s.lock(ctx); err != nil {
		return turn.Receipt{}, err
	}
	defer s.mu.Unlock()
	u := &undo{}
	receipt, err := s.apply(u, account, b)
	if err != nil {
		u.rollback()
		return turn.Receipt{}, err
	}
	return receipt, nil
}

// stageFault returns the failure armed for the end of a bundle stage: the stage's own point,
// then the standalone point of the same write (AfterJournalInsertBeforeCommit after the journal
// stage, AfterCommitBeforeEventReadback after the events, AfterInteractionPersistence after the
// inserts), so that a test arming the standalone point also reaches the write inside a bundle.
func (s *Backend) stageFault(step int) error {
	if err := s.faults.take(AfterBundleStep(step)); err != nil {
		return err
	}
	switch step {
	case 1:
		return s.faults.take(AfterJournalInsertBeforeCommit)
	case 2:
		return s.faults.take(AfterCommitBeforeEventReadback)
	case 5:
		return s.faults.take(AfterInteractionPersistence)
	}
	return nil
}

func (s *Backend) apply(u *undo, account string, b turn.Bundle) (turn.Receipt, error) {
	now := s.now()
	r := turn.Receipt{EventIDs: []turn.ID{}, InsertedInteractions: []turn.ID{}, InvalidatedInteractions: []turn.ID{}, CommittedAt: now}
	err := bundle.Walk(&b, bundle.Steps{
		Complete: func(_ bundle.Item, c turn.JournalCompletion) error {
			return s.complete(u, account, c.CommandID, c.Outcome, now)
		},
		Append: func(_ bundle.Item, batch turn.EventBatch) error {
			ids, err := s.append(u, batch)
			r.EventIDs = append(r.EventIDs, ids...)
			return err
		},
		Finish: func(_ bundle.Item, f turn.InteractionFinish) error {
			_, err := s.finish(u, account, f.InteractionID, f.Outcome)
			return err
		},
		Invalidate: func(_ bundle.Item, inv turn.CaseInvalidation) error {
			rev := inv.NewRevision
			r.InvalidatedInteractions = append(r.InvalidatedInteractions, s.invalidate(u, account, inv.CaseKey, &rev, inv.Reason, now)...)
			return nil
		},
		Insert: func(_ bundle.Item, ins turn.InteractionInsert) error {
			superseded, err := s.insert(u, ins.Interaction, ins.ReplaceBlocking, now)
			if err != nil {
				return err
			}
			r.InvalidatedInteractions = append(r.InvalidatedInteractions, superseded...)
			r.InsertedInteractions = append(r.InsertedInteractions, ins.Interaction.ID)
			return nil
		},
		Enqueue: func(_ bundle.Item, e turn.OutboxEntry) error { return s.enqueue(u, e) },
		Replay: func(_ bundle.Item, rec turn.ReplayRecord) error {
			s.putReplay(u, rec)
			return nil
		},
		Phase: func(_ bundle.Item, p turn.PhaseUpdate) error {
			_, err := s.setPhase(u, account, p.TurnID, p.Phase, now)
			return err
		},
		StageDone: func(st bundle.Stage) error { return s.stageFault(int(st)) },
	})
	if err != nil {
		return turn.Receipt{}, err
	}
	return r, nil
}
