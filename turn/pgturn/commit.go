package pgturn

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/internal/bundle"
)

// Commit implements turn.CommitStore: it applies the bundle (checked by turn.PrepareCommit) in
// one transaction, committed only after every item's rule accepted: on any error nothing of the
// bundle was ever visible to another connection, including the records it modified. BEGIN and
// every item's statement travel in one round trip and COMMIT in a second, whatever the bundle's
// size. A COMMIT that gets no answer is ErrTimeout (it may have landed: re-read, for instance the
// journal entry, before retrying).
func (s *Backend) Commit(ctx context.Context, account string, b turn.Bundle) (turn.Receipt, error) {
	at := s.now()
	if b.IsEmpty() {
		return emptyReceipt(at), nil
	}
	steps, receipt, err := s.bundleSteps(account, &b, at)
	if err != nil {
		return turn.Receipt{}, err
	}
	if err := s.runSteps(ctx, steps); err != nil {
		return turn.Receipt{}, err
	}
	return receipt(), nil
}

// CommitIn applies the bundle inside tx, a transaction the application owns, so that its own
// writes to its tables in the same database land with the bundle or not at all. It does not
// commit: the caller does, or rolls back to discard both. It is the one write reached through
// the escape hatch rather than the checked Stores, so it runs the same check first
// (turn.PrepareCommit) and refuses what Commit refuses, before anything is sent:
//
//	b := stores.Backend().(*pgturn.Backend)
//	receipt, err := b.CommitIn(ctx, tx, account, bundle)
//
// The bundle runs under a savepoint. If an item fails, the savepoint is rolled back and the error
// returned: none of the bundle remains in tx, and tx is still usable, so the caller's own writes
// survive and the caller decides whether to commit them. Store-stamped times are taken when
// CommitIn runs, not when the caller commits. A bundle carrying events holds its account's
// append lock (see sqlAppendEventsLock) until tx ends, so keep tx short: the account's other
// appends wait for it. CommitIn runs on the application's transaction, so Stores.Close does not
// stop it.
func (s *Backend) CommitIn(ctx context.Context, tx pgx.Tx, account string, b turn.Bundle) (turn.Receipt, error) {
	if tx == nil {
		return turn.Receipt{}, fmt.Errorf("%w: pgturn: CommitIn needs a transaction", turn.ErrInvalid)
	}
	b, err := turn.PrepareCommit(account, b)
	if err != nil {
		return turn.Receipt{}, err
	}
	at := s.now()
	if b.IsEmpty() {
		return emptyReceipt(at), nil
	}
	steps, receipt, err := s.bundleSteps(account, &b, at)
	if err != nil {
		return turn.Receipt{}, err
	}
	if err := s.runStepsIn(ctx, tx, steps); err != nil {
		return turn.Receipt{}, err
	}
	return receipt(), nil
}

// emptyReceipt is the receipt of a bundle that carries nothing: no round trip, nothing written.
func emptyReceipt(at time.Time) turn.Receipt {
	return turn.Receipt{EventIDs: []turn.ID{}, InsertedInteractions: []turn.ID{}, InvalidatedInteractions: []turn.ID{}, CommittedAt: at}
}

// bundleSteps turns the bundle into its statements in the contract's fixed order, each built by the
// same function as its standalone method and stamped with at. receipt assembles what the steps
// reported once they have all run.
func (s *Backend) bundleSteps(account string, b *turn.Bundle, at time.Time) (steps []step, receipt func() turn.Receipt, err error) {
	add := func(st step, err error) error {
		if err == nil {
			steps = append(steps, st)
		}
		return err
	}
	if len(b.Events) > 0 {
		steps = append(steps, s.appendLockStep(account)) // first: see sqlAppendEventsLock
	}
	appended := make([][]turn.ID, len(b.Events))
	retired := make([][]turn.ID, len(b.InteractionInvalidations))
	superseded := make([][]turn.ID, len(b.InteractionInserts))
	err = bundle.Walk(b, bundle.Steps{
		Complete: func(it bundle.Item, c turn.JournalCompletion) error {
			return add(s.completeStep(it.String(), account, c.CommandID, c.Outcome, at))
		},
		Append: func(it bundle.Item, batch turn.EventBatch) error {
			steps = append(steps, s.appendStep(it.String(), batch, &appended[it.Index]))
			return nil
		},
		Finish: func(it bundle.Item, f turn.InteractionFinish) error {
			return add(s.finishStep(it.String(), account, f.InteractionID, f.Outcome, nil))
		},
		Invalidate: func(it bundle.Item, inv turn.CaseInvalidation) error {
			return add(s.invalidateStep(it.String(), account, inv.CaseKey, inv.NewRevision, inv.Reason, at, &retired[it.Index]))
		},
		Insert: func(it bundle.Item, ins turn.InteractionInsert) error {
			return add(s.insertStep(it.String(), ins.Interaction, ins.ReplaceBlocking, at, &superseded[it.Index]))
		},
		Enqueue: func(it bundle.Item, e turn.OutboxEntry) error {
			steps = append(steps, s.enqueueStep(it.String(), e))
			return nil
		},
		Replay: func(it bundle.Item, r turn.ReplayRecord) error { return add(s.replayStep(it.String(), r)) },
		Phase: func(it bundle.Item, p turn.PhaseUpdate) error {
			steps = append(steps, s.phaseStep(it.String(), account, p.TurnID, p.Phase, at, nil))
			return nil
		},
	})
	if err != nil {
		return nil, nil, err
	}
	return steps, func() turn.Receipt {
		r := emptyReceipt(at)
		for _, ids := range appended {
			r.EventIDs = append(r.EventIDs, ids...)
		}
		for _, ids := range retired {
			r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
		}
		for i, ids := range superseded {
			r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
			r.InsertedInteractions = append(r.InsertedInteractions, b.InteractionInserts[i].Interaction.ID)
		}
		return r
	}, nil
}
