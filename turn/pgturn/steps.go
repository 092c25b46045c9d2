package pgturn

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// step is one statement of a write and the rule that reads its answer. A rule never needs a
// second statement: where a compare-and-swap matches no row, the statement itself returns the
// row as it stood (a UNION branch reading the statement's snapshot), so the rule can tell
// ErrNotFound from ErrConflict from an accepted repeat. The same step therefore runs on its own
// (a standalone method) or queued with every other step of a bundle, in one round trip, and a
// bundle item obeys exactly the rule of its standalone method.
//
// A step's statement must not depend on the answer of an earlier step: all of them are sent
// before any answer is read.
type step struct {
	what string // names the item in errors, e.g. "bundle event batch 0"
	sql  string // schema already spliced in
	args []any
	read func(r results) error // errors it returns are classified
}

// results reads the answer to one statement: pgx.BatchResults, as a step is always run queued
// in a batch (alone for a standalone method, with the others for a bundle).
type results interface {
	Exec() (pgconn.CommandTag, error)
	Query() (pgx.Rows, error)
	QueryRow() pgx.Row
}

// execStep is a step whose answer is only success or failure.
func execStep(what, sql string, args []any, done func(pgconn.CommandTag) error) step {
	return step{what: what, sql: sql, args: args, read: func(r results) error {
		tag, err := r.Exec()
		if err != nil {
			return classify(err)
		}
		if done != nil {
			return done(tag)
		}
		return nil
	}}
}

// queue appends the steps to b; while the answers are read, *current is the index of the step
// being read, so that an error can name its item.
func queue(b *pgx.Batch, steps []step, current *int) {
	for i, st := range steps {
		b.Queue(st.sql, st.args...).Fn = func(br pgx.BatchResults) error {
			*current = i
			return st.read(br)
		}
	}
}

// stepErr names the failed step, if the failure came from one, and classifies the error.
func stepErr(steps []step, current int, err error) error {
	err = classify(err)
	if current >= 0 && steps[current].what != "" {
		return fmt.Errorf("%s: %w", steps[current].what, err)
	}
	return err
}

// runSteps applies steps in a transaction of their own: BEGIN and every statement go to the server
// in one round trip, each answer is read in order by its step's rule, and the transaction is
// committed (a second round trip) only if every rule accepted. Otherwise it is rolled back and
// nothing of it was ever visible to another connection.
func (s *Backend) runSteps(ctx context.Context, steps []step) error {
	conn, err := s.acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	var b pgx.Batch
	b.BeginTx(pgx.TxOptions{})
	current := -1
	queue(&b, steps, &current)
	br := conn.SendBatch(ctx, &b)
	tx := br.Tx()
	if err := br.Close(); err != nil {
		rollback(ctx, tx)
		return stepErr(steps, current, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return commitErr(err)
	}
	return nil
}

// runStepsIn applies steps inside tx, under a savepoint: on failure the savepoint is rolled back,
// so none of the steps remains in tx and tx stays usable.
func (s *Backend) runStepsIn(ctx context.Context, tx pgx.Tx, steps []step) error {
	var b pgx.Batch
	b.Queue(s.st.CommitInSavepoint)
	current := -1
	queue(&b, steps, &current)
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), rollbackTimeout)
		defer cancel()
		_, _ = tx.Exec(rctx, s.st.CommitInRollback)
		return stepErr(steps, current, err)
	}
	if _, err := tx.Exec(ctx, s.st.CommitInRelease); err != nil {
		return classify(err)
	}
	return nil
}
