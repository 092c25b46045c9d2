package pgstore_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
)

// TestAttributesCommitBatchTx replaces attributes in the caller's transaction: written when it
// commits, gone when it rolls back, and written in a savepoint too, where the statement behind
// the commit cannot see the win and the store writes them with one more. QueueCommitGuarded in a
// savepoint fails the batch rather than leave them unwritten.
func TestAttributesCommitBatchTx(t *testing.T) {
	t.Parallel()
	s := newStore(t)
	b := backend(t, s)
	ctx := context.Background()
	stage := func(v string) int64 {
		t.Helper()
		c, err := s.Count(ctx, stead.ListFilter{Attributes: []stead.AttrFilter{
			stead.Where("stage", stead.AttrEq, stead.AttrString(v))}})
		if err != nil {
			t.Fatal(err)
		}
		return c.Total
	}
	stored := newExe("stored")
	stored.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("start")}
	mustCommit(t, s, stored, stead.Bundle{})

	for _, tc := range []struct {
		name      string
		savepoint bool
		commit    bool
	}{
		{"rolled_back", false, false},
		{"committed", false, true},
		{"savepoint_rolled_back", true, false},
		{"savepoint_committed", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := s.Load(ctx, "stored")
			if err != nil {
				t.Fatal(err)
			}
			fresh := newExe("fresh-" + tc.name)
			fresh.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("fresh-" + tc.name)}
			items := []stead.CommitItem{
				{Execution: cur, Bundle: stead.Bundle{Attributes: map[string]stead.AttrValue{"stage": stead.AttrString(tc.name)}}},
				{Execution: fresh, Bundle: alsoBundle("fresh-"+tc.name, 2)},
			}
			tx, err := b.Pool().Begin(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck // ends the transaction if the test fails
			q := tx
			if tc.savepoint {
				if q, err = tx.Begin(ctx); err != nil {
					t.Fatal(err)
				}
			}
			res, err := b.CommitBatchTx(ctx, q, items)
			if err != nil || res[0].Err != nil || res[1].Err != nil {
				t.Fatalf("CommitBatchTx = %+v, %v", res, err)
			}
			if tc.savepoint {
				if err := q.Commit(ctx); err != nil { // releases the savepoint
					t.Fatal(err)
				}
			}
			if tc.commit {
				err = tx.Commit(ctx)
			} else {
				err = tx.Rollback(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
			want := map[bool]int64{true: 1, false: 0}[tc.commit]
			if got := stage(tc.name); got != want {
				t.Errorf("stored's new stage counted %d, want %d", got, want)
			}
			if got := stage("fresh-" + tc.name); got != want {
				t.Errorf("fresh's stage counted %d, want %d", got, want)
			}
		})
	}

	// QueueCommitGuarded in a savepoint: the win is hidden, so the batch fails and the caller rolls
	// back; nothing is written.
	cur, err := s.Load(ctx, "stored")
	if err != nil {
		t.Fatal(err)
	}
	tx, err := b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // the point is to roll back
	sp, err := tx.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	batch := &pgx.Batch{}
	var res stead.CommitResult
	if err := b.QueueCommitGuarded(batch, cur, stead.Bundle{Attributes: map[string]stead.AttrValue{"stage": stead.AttrString("queued")}}, &res); err != nil {
		t.Fatal(err)
	}
	if err := sp.SendBatch(ctx, batch).Close(); err == nil {
		t.Fatal("QueueCommitGuarded in a savepoint with attributes: the batch did not fail")
	}
	if err := tx.Rollback(ctx); err != nil && !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatal(err)
	}
	if got := stage("queued"); got != 0 {
		t.Errorf("a rolled-back queued commit left %d rows", got)
	}

	// QueueCommitGuarded outside a savepoint writes them with the commit.
	tx, err = b.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck // ends the transaction if the test fails
	batch = &pgx.Batch{}
	if err := b.QueueCommitGuarded(batch, cur, stead.Bundle{Attributes: map[string]stead.AttrValue{"stage": stead.AttrString("queued")}}, &res); err != nil {
		t.Fatal(err)
	}
	if err := tx.SendBatch(ctx, batch).Close(); err != nil || res.Err != nil {
		t.Fatalf("queued commit: %v, %v", err, res.Err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if got := stage("queued"); got != 1 {
		t.Errorf("the queued commit's attributes counted %d, want 1", got)
	}
}
