package pgturn

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
)

// Commit validates the bundle for account, then applies it in one transaction, committed only
// after every item's rule accepted: on any error nothing of the bundle was ever visible to
// another connection, including the records it modified. BEGIN and every item's statement travel
// in one round trip and COMMIT in a second, whatever the bundle's size. A COMMIT that gets no
// answer is ErrTimeout (it may have landed: re-read, for instance the journal entry, before
// retrying).
func (s *Store) Commit(ctx context.Context, account string, b turn.Bundle) (turn.Receipt, error) {
	if err := b.Validate(account); err != nil {
		return turn.Receipt{}, err
	}
	at := s.now()
	if b.IsEmpty() {
		return turn.Receipt{CommittedAt: at}, s.open()
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

// CommitIn applies the bundle inside tx, a transaction the caller owns, so that the application's
// own writes to its tables in the same database land with the bundle or not at all. It does not
// commit: the caller does, or rolls back to discard both.
//
// The bundle runs under a savepoint. If an item fails, the savepoint is rolled back and the error
// returned: none of the bundle remains in tx, and tx is still usable, so the caller's own writes
// survive and the caller decides whether to commit them. Store-stamped times are taken when
// CommitIn runs, not when the caller commits. A bundle carrying events holds its account's
// append lock (see AppendEvents) until tx ends, so keep tx short: the account's other appends
// wait for it.
func (s *Store) CommitIn(ctx context.Context, tx pgx.Tx, account string, b turn.Bundle) (turn.Receipt, error) {
	if err := b.Validate(account); err != nil {
		return turn.Receipt{}, err
	}
	if tx == nil {
		return turn.Receipt{}, fmt.Errorf("%w: pgturn: CommitIn needs a transaction", turn.ErrInvalid)
	}
	if err := s.open(); err != nil {
		return turn.Receipt{}, err
	}
	at := s.now()
	if b.IsEmpty() {
		return turn.Receipt{CommittedAt: at}, nil
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

// bundleSteps turns the bundle into its statements in the contract's fixed order, each built by the
// same function as its standalone method and stamped with at. receipt assembles what the steps
// reported once they have all run.
func (s *Store) bundleSteps(account string, b *turn.Bundle, at time.Time) (steps []step, receipt func() turn.Receipt, err error) {
	add := func(st step, err error) error {
		if err == nil {
			steps = append(steps, st)
		}
		return err
	}
	if len(b.Events) > 0 {
		steps = append(steps, s.appendLockStep(account)) // first: see sqlAppendLock
	}
	appended := make([][]turn.ID, len(b.Events))
	retired := make([][]turn.ID, len(b.InteractionInvalidations))
	superseded := make([][]turn.ID, len(b.InteractionInserts))
	for i, c := range b.JournalCompletions {
		if err := add(s.completeStep(fmt.Sprintf("bundle journal completion %d", i), account, c.CommandID, c.Outcome, at)); err != nil {
			return nil, nil, err
		}
	}
	for i, batch := range b.Events {
		if err := add(s.appendStep(fmt.Sprintf("bundle event batch %d", i), batch, &appended[i])); err != nil {
			return nil, nil, err
		}
	}
	for i, f := range b.InteractionFinishes {
		if err := add(s.finishStep(fmt.Sprintf("bundle interaction finish %d", i), account, f.InteractionID, f.Outcome, nil)); err != nil {
			return nil, nil, err
		}
	}
	for i, inv := range b.InteractionInvalidations {
		if err := add(s.invalidateStep(fmt.Sprintf("bundle invalidation %d", i), account, inv.CaseKey, inv.NewRevision, inv.Reason, at, &retired[i])); err != nil {
			return nil, nil, err
		}
	}
	for i, ins := range b.InteractionInserts {
		if err := add(s.insertStep(fmt.Sprintf("bundle interaction insert %d", i), ins.Interaction, ins.ReplaceBlocking, at, &superseded[i])); err != nil {
			return nil, nil, err
		}
	}
	for i, e := range b.OutboxEntries {
		if err := add(s.enqueueStep(fmt.Sprintf("bundle outbox entry %d", i), e)); err != nil {
			return nil, nil, err
		}
	}
	if b.ReplayRecord != nil {
		if err := add(s.replayStep("bundle replay record", *b.ReplayRecord)); err != nil {
			return nil, nil, err
		}
	}
	if p := b.TurnPhase; p != nil {
		if err := add(s.phaseStep("bundle turn phase", account, p.TurnID, p.Phase, at, nil)); err != nil {
			return nil, nil, err
		}
	}
	return steps, func() turn.Receipt {
		r := turn.Receipt{CommittedAt: at}
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
