package pgturn

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/turn"
)

// Commit validates the bundle for account, then applies it in one transaction, committed only
// after the last item succeeded: on any error nothing of the bundle was ever visible to another
// connection, including the records it modified. A COMMIT that gets no answer is ErrTimeout (it
// may have landed: re-read, for instance the journal entry, before retrying).
func (s *Store) Commit(ctx context.Context, account string, b turn.Bundle) (turn.Receipt, error) {
	if err := b.Validate(account); err != nil {
		return turn.Receipt{}, err
	}
	at := s.now()
	if b.IsEmpty() {
		return turn.Receipt{CommittedAt: at}, s.open()
	}
	var receipt turn.Receipt
	err := s.write(ctx, func(tx pgx.Tx) error {
		var err error
		receipt, err = s.apply(ctx, tx, account, &b, at)
		return err
	})
	if err != nil {
		return turn.Receipt{}, err
	}
	return receipt, nil
}

// CommitIn applies the bundle inside tx, a transaction the caller owns, so that the application's
// own writes to its tables in the same database land with the bundle or not at all. It does not
// commit: the caller does, or rolls back to discard both.
//
// The bundle runs under a savepoint. If an item fails, the savepoint is rolled back and the error
// returned: none of the bundle remains in tx, and tx is still usable, so the caller's own writes
// survive and the caller decides whether to commit them. Store-stamped times are taken when
// CommitIn runs, not when the caller commits.
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
	sp, err := tx.Begin(ctx)
	if err != nil {
		return turn.Receipt{}, classify(err)
	}
	receipt, err := s.apply(ctx, sp, account, &b, at)
	if err != nil {
		rollback(ctx, sp)
		return turn.Receipt{}, err
	}
	if err := sp.Commit(ctx); err != nil { // RELEASE SAVEPOINT: nothing is committed yet
		return turn.Receipt{}, classify(err)
	}
	return receipt, nil
}

// apply runs the bundle's items in the contract's fixed order, each through the same function as
// its standalone method, all stamped with at. The first failure stops it; the caller discards the
// transaction.
func (s *Store) apply(ctx context.Context, q querier, account string, b *turn.Bundle, at time.Time) (turn.Receipt, error) {
	r := turn.Receipt{CommittedAt: at}
	for i, c := range b.JournalCompletions {
		if err := s.completeCommand(ctx, q, account, c.CommandID, c.Outcome, at); err != nil {
			return r, fmt.Errorf("bundle journal completion %d: %w", i, err)
		}
	}
	for i, batch := range b.Events {
		ids, err := s.appendEvents(ctx, q, batch)
		if err != nil {
			return r, fmt.Errorf("bundle event batch %d: %w", i, err)
		}
		r.EventIDs = append(r.EventIDs, ids...)
	}
	for i, f := range b.InteractionFinishes {
		if _, err := s.finishResolution(ctx, q, account, f.InteractionID, f.Outcome); err != nil {
			return r, fmt.Errorf("bundle interaction finish %d: %w", i, err)
		}
	}
	for i, inv := range b.InteractionInvalidations {
		ids, err := s.invalidateForCase(ctx, q, account, inv.CaseKey, inv.NewRevision, inv.Reason, at)
		if err != nil {
			return r, fmt.Errorf("bundle invalidation %d: %w", i, err)
		}
		r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
	}
	for i, ins := range b.InteractionInserts {
		ids, err := s.insertInteraction(ctx, q, ins.Interaction, ins.ReplaceBlocking, at)
		if err != nil {
			return r, fmt.Errorf("bundle interaction insert %d: %w", i, err)
		}
		r.InvalidatedInteractions = append(r.InvalidatedInteractions, ids...)
		r.InsertedInteractions = append(r.InsertedInteractions, ins.Interaction.ID)
	}
	for i, e := range b.OutboxEntries {
		if err := s.enqueue(ctx, q, e); err != nil {
			return r, fmt.Errorf("bundle outbox entry %d: %w", i, err)
		}
	}
	if b.ReplayRecord != nil {
		if err := s.putReplay(ctx, q, *b.ReplayRecord); err != nil {
			return r, fmt.Errorf("bundle replay record: %w", err)
		}
	}
	if p := b.TurnPhase; p != nil {
		if _, err := s.setTurnPhase(ctx, q, account, p.TurnID, p.Phase, at); err != nil {
			return r, fmt.Errorf("bundle turn phase: %w", err)
		}
	}
	return r, nil
}
