package memturn

import (
	"context"

	"github.com/steadhq/stead/turn"
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
	stages := []func() error{
		func() error {
			for _, c := range b.JournalCompletions {
				if err := s.complete(u, account, c.CommandID, c.Outcome, now); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			for _, batch := range b.Events {
				ids, err := s.append(u, batch)
				if err != nil {
					return err
				}
				r.EventIDs = append(r.EventIDs, ids...)
			}
			return nil
		},
		func() error {
			for _, f := range b.InteractionFinishes {
				if _, err := s.finish(u, account, f.InteractionID, f.Outcome); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			for _, inv := range b.InteractionInvalidations {
				rev := inv.NewRevision
				r.InvalidatedInteractions = append(r.InvalidatedInteractions, s.invalidate(u, account, inv.CaseKey, &rev, inv.Reason, now)...)
			}
			return nil
		},
		func() error {
			for _, ins := range b.InteractionInserts {
				superseded, err := s.insert(u, ins.Interaction, ins.ReplaceBlocking, now)
				if err != nil {
					return err
				}
				r.InvalidatedInteractions = append(r.InvalidatedInteractions, superseded...)
				r.InsertedInteractions = append(r.InsertedInteractions, ins.Interaction.ID)
			}
			return nil
		},
		func() error {
			for _, e := range b.OutboxEntries {
				if err := s.enqueue(u, e); err != nil {
					return err
				}
			}
			return nil
		},
		func() error {
			if b.ReplayRecord != nil {
				s.putReplay(u, *b.ReplayRecord)
			}
			return nil
		},
		func() error {
			if b.TurnPhase != nil {
				_, err := s.setPhase(u, account, b.TurnPhase.TurnID, b.TurnPhase.Phase, now)
				return err
			}
			return nil
		},
	}
	for i, stage := range stages {
		if err := stage(); err != nil {
			return turn.Receipt{}, err
		}
		if err := s.stageFault(i + 1); err != nil {
			return turn.Receipt{}, err
		}
	}
	return r, nil
}
