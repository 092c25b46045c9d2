package sqliteturn

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
)

// The benchmarks below measure the store beside the bare SQLite ceiling of the same file
// settings (BenchmarkCeiling). bench/results/turn-sqlite.md has the command and the figures.

var benchEpoch = time.Unix(0, 0).UTC()

func benchAt(s int) time.Time { return benchEpoch.Add(time.Duration(s) * time.Second) }

// benchDB opens a fresh file with the default settings (WAL, synchronous NORMAL).
func benchDB(b *testing.B) *sqlitedb.DB {
	b.Helper()
	db, err := sqlitedb.Open(b.Context(), sqlitedb.Config{Path: filepath.Join(b.TempDir(), "turns.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return db
}

func benchStores(b *testing.B) (turn.Stores, *sqlitedb.DB) {
	b.Helper()
	db := benchDB(b)
	s, err := New(b.Context(), db)
	if err != nil {
		b.Fatal(err)
	}
	return s, db
}

func benchBatch(account string, key turn.CaseKey, rev turn.Revision, n int, occurred time.Time) turn.EventBatch {
	batch := turn.EventBatch{AccountID: account, CaseKey: key, CommandID: turn.NewID(), Revision: rev}
	for i := range n {
		batch.Events = append(batch.Events, turn.NewEvent{EventID: turn.NewID(), EventType: "trip.updated",
			OccurredAt: occurred, Payload: json.RawMessage(`{"index":` + strconv.Itoa(i) + `,"traveler":"Ada"}`)})
	}
	return batch
}

// BenchmarkCommitBundle commits one turn's bundle: a batch of n events, an outbox entry, the
// replay record and the turn's phase, in one transaction (pgturn's benchmark of the same name).
func BenchmarkCommitBundle(b *testing.B) {
	s, _ := benchStores(b)
	ctx := b.Context()
	conv, turnID := turn.NewID(), turn.NewID()
	if err := s.Conversations.CreateConversation(ctx, turn.Conversation{ID: conv, AccountID: "acct", CreatedAt: benchAt(0)}); err != nil {
		b.Fatal(err)
	}
	if err := s.Conversations.AppendUserTurn(ctx, turn.UserTurn{Input: turn.TurnInput{TurnID: turnID, ConversationID: conv,
		Actor: turn.Actor{AccountID: "acct", UserID: "ada"}, Text: "book the 9:40 to Lyon"}, ReceivedAt: benchAt(1)}); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 8, 64} {
		b.Run("events="+strconv.Itoa(n), func(b *testing.B) {
			key := turn.CaseKey{Workflow: "trip", CaseID: "case-" + strconv.Itoa(n)}
			rev := turn.Revision(0)
			for b.Loop() {
				rev++
				replay := turn.ReceivedReplay(turnID, conv, "acct", benchAt(2))
				replay.Phase = turn.PhaseCommitted
				id := turn.NewID()
				bundle := turn.Bundle{
					Events: []turn.EventBatch{benchBatch("acct", key, rev, n, benchAt(2))},
					OutboxEntries: []turn.OutboxEntry{{OutboxID: id, CommandID: turn.NewID(), Destination: "mailer",
						Payload: json.RawMessage(`{}`), IdempotencyKey: id.String(), Status: turn.OutboxPending, CreatedAt: benchAt(2)}},
					ReplayRecord: &replay,
					TurnPhase:    &turn.PhaseUpdate{TurnID: turnID, Phase: turn.PhaseCommitted},
				}
				if _, err := s.Commits.Commit(ctx, "acct", bundle); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "events/op")
		})
	}
}

// BenchmarkCeiling is the bare SQLite ceiling of BenchmarkCommitBundle on the same file settings:
// a plain database/sql loop of the store's own event INSERT, prepared once, n rows in one BEGIN
// IMMEDIATE transaction, with no gate, no retry, no checks, no encoding and no other item of the
// bundle.
func BenchmarkCeiling(b *testing.B) {
	db := benchDB(b)
	ctx := context.Background()
	if err := sqlitedb.Migrate(ctx, db, MigrationsTable, migrations()); err != nil {
		b.Fatal(err)
	}
	payload := `{"index":0,"traveler":"Ada"}`
	insert, err := db.W.PrepareContext(ctx, sqlAppendEvents)
	if err != nil {
		b.Fatal(err)
	}
	defer insert.Close()
	for _, n := range []int{1, 8, 64} {
		b.Run("insert="+strconv.Itoa(n), func(b *testing.B) {
			cmd := turn.NewID().String()
			for b.Loop() {
				tx, err := db.W.BeginTx(ctx, nil)
				if err != nil {
					b.Fatal(err)
				}
				st := tx.StmtContext(ctx, insert)
				for range n {
					if _, err := st.ExecContext(ctx, "acct", turn.NewID().String(), "trip", "c", 1, cmd,
						"trip.updated", payload, int64(0)); err != nil {
						b.Fatal(err)
					}
				}
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n), "events/op")
		})
	}
}

// BenchmarkReadFrom reads one page of an account's event stream, resuming from the cursor the
// previous page returned. Another tenant's events are interleaved with the account's: they must
// cost nothing.
func BenchmarkReadFrom(b *testing.B) {
	s, _ := benchStores(b)
	ctx := b.Context()
	key := turn.CaseKey{Workflow: "trip", CaseID: "c"}
	const batches, perBatch = 64, 64 // 4096 events of the account, as many of another
	for i := range batches {
		for _, acct := range []string{"acct", "other"} {
			if _, err := s.Events.AppendEvents(ctx, benchBatch(acct, key, turn.Revision(i+1), perBatch, benchAt(i))); err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, page := range []int{32, 128, 512} {
		b.Run("page="+strconv.Itoa(page), func(b *testing.B) {
			cursor := turn.Start
			for b.Loop() {
				p, err := s.Events.ReadFrom(ctx, "acct", cursor, page)
				if err != nil {
					b.Fatal(err)
				}
				if len(p.Events) < page {
					cursor = turn.Start // wrapped around the stream
					continue
				}
				cursor = p.Next
			}
			b.ReportMetric(float64(page), "events/op")
		})
	}
}

// BenchmarkClaimDue claims 16 due rows per call with 8 dispatchers claiming concurrently from one
// outbox. An op is one claim; ns/op is wall time divided by all dispatchers' claims.
func BenchmarkClaimDue(b *testing.B) {
	const batch, dispatchers = 16, 8
	s, db := benchStores(b)
	ctx := b.Context()
	var seeded int
	b.Run(fmt.Sprintf("rows=%d/dispatchers=%d", batch, dispatchers), func(b *testing.B) {
		// Fresh due rows for every claim of this run, inserted in bulk: the claim is measured,
		// not the enqueue.
		need := (b.N + dispatchers) * batch
		if _, err := db.W.ExecContext(ctx, `WITH RECURSIVE i(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM i WHERE n < ?2)
			INSERT INTO turn_outbox (outbox_id, command_id, destination, payload, idempotency_key, status, created_at)
			SELECT printf('%08x-0000-7000-8000-%012x', ?1 + n, ?1 + n), printf('%08x-0000-7000-8000-000000000000', ?1 + n),
			    'bench', '{}', 'k-' || (?1 + n), 'pending', (?1 + n) * 1000000 FROM i`, seeded, need); err != nil {
			b.Fatal(err)
		}
		seeded += need
		b.SetParallelism((dispatchers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		var worker atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			name := "dispatcher-" + strconv.FormatInt(worker.Add(1), 10)
			for pb.Next() {
				got, err := s.Outbox.ClaimDue(ctx, benchAt(1<<30), batch, name)
				if err != nil {
					b.Error(err)
					return
				}
				if len(got) != batch {
					b.Errorf("claimed %d rows, want %d", len(got), batch)
					return
				}
			}
		})
		b.ReportMetric(batch, "rows/op")
	})
}
