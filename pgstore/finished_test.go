package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
)

// TestWatchFinished checks the finish notifications Client.Wait listens to: a commit that
// finishes a watched execution wakes its watch, one that does not finish it (or finishes
// another) does not, and a closed store refuses to watch. The schema names (a short one and one
// long enough that the channel is named by a digest) cover both channel names.
func TestWatchFinished(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"short", "a_schema_name_long_enough_that_the_channel_needs_a_digest"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s := newStore(t)
			b := backend(t, s)
			wctx, stop := context.WithCancel(ctx)
			defer stop()
			ch, err := b.WatchFinished(wctx, "w1")
			if err != nil {
				t.Fatalf("WatchFinished: %v", err)
			}
			quiet := func(what string) {
				t.Helper()
				select {
				case <-ch:
					t.Fatalf("woken by %s", what)
				case <-time.After(300 * time.Millisecond):
				}
			}
			exe := &stead.Execution{ID: "w1", DefinitionID: "d", Status: stead.StatusRunning}
			v, err := s.Save(ctx, exe)
			if err != nil {
				t.Fatal(err)
			}
			quiet("the insert of a running execution")
			other := &stead.Execution{ID: "w2", DefinitionID: "d", Status: stead.StatusDone, Outcome: "ok"}
			if _, err := s.Save(ctx, other); err != nil {
				t.Fatal(err)
			}
			quiet("another execution's finish")
			exe.Version = v
			exe.ActivePath = "next"
			c, err := s.Commit(ctx, exe, stead.Bundle{ProcessedEventID: "e1"})
			if err != nil {
				t.Fatal(err)
			}
			quiet("a commit that leaves it running")
			exe.Version = c.Version
			exe.Status, exe.Outcome, exe.FinishedAt = stead.StatusDone, "ok", time.Now()
			if _, err := s.Commit(ctx, exe, stead.Bundle{ProcessedEventID: "e2"}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ch:
			case <-time.After(10 * time.Second):
				t.Fatal("the finishing commit did not wake the watch")
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := b.WatchFinished(ctx, "w1"); !errors.Is(err, stead.ErrClosed) {
				t.Errorf("WatchFinished after Close = %v; want ErrClosed", err)
			}
		})
	}
}

// TestWatchFinishedPgBouncerMode refuses to watch through a pool in PgBouncer mode, where LISTEN
// would succeed and receive nothing: Wait then polls.
func TestWatchFinishedPgBouncerMode(t *testing.T) {
	t.Parallel()
	pool := openPool(t, pgdb.Config{PgBouncer: true})
	name := pgdbtest.NewName(t)
	t.Cleanup(func() { pgdbtest.Drop(t, pool, name) })
	s, err := pgstore.New(context.Background(), pool, pgstore.WithSchema(name))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := backend(t, s).WatchFinished(context.Background(), "x"); !errors.Is(err, stead.ErrUnavailable) {
		t.Errorf("WatchFinished in PgBouncer mode = %v; want ErrUnavailable", err)
	}
}
