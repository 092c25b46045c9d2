package pgturn_test

import (
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/steadhq/stead/turn"
)

// The benchmarks below are what bench/turn reports, each beside pgbench's single-row INSERT on
// the same server. Run them with:
//
//	go run ./bench/turn

// BenchmarkCommitBundle commits one turn's bundle: a batch of n events, an outbox entry, the
// replay record and the turn's phase, in one transaction.
func BenchmarkCommitBundle(b *testing.B) {
	s := newStore(b)
	ctx := b.Context()
	conv, turnID := turn.NewID(), turn.NewID()
	must(b, s.Conversations.CreateConversation(ctx, turn.Conversation{ID: conv, AccountID: "acct", CreatedAt: at(0)}), "conversation")
	must(b, s.Conversations.AppendUserTurn(ctx, turn.UserTurn{Input: turn.TurnInput{TurnID: turnID, ConversationID: conv,
		Actor: turn.Actor{AccountID: "acct", UserID: "ada"}, Text: "book the 9:40 to Lyon"}, ReceivedAt: at(1)}), "turn")
	for _, n := range []int{1, 8, 64} {
		b.Run("events="+strconv.Itoa(n), func(b *testing.B) {
			key := turn.CaseKey{Workflow: "trip", CaseID: "case-" + strconv.Itoa(n)}
			rev := turn.Revision(0)
			for b.Loop() {
				rev++
				replay := turn.ReceivedReplay(turnID, conv, "acct", at(2))
				replay.Phase = turn.PhaseCommitted
				bundle := turn.Bundle{
					Events:        []turn.EventBatch{eventBatch("acct", key, rev, n, at(2))},
					OutboxEntries: []turn.OutboxEntry{outboxEntry(turn.NewID(), "mailer", turn.NewID().String(), at(2))},
					ReplayRecord:  &replay,
					TurnPhase:     &turn.PhaseUpdate{TurnID: turnID, Phase: turn.PhaseCommitted},
				}
				if _, err := s.Commits.Commit(ctx, "acct", bundle); err != nil {
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
	s := newStore(b)
	ctx := b.Context()
	key := turn.CaseKey{Workflow: "trip", CaseID: "c"}
	const batches, perBatch = 64, 64 // 4096 events of the account, as many of another
	for i := range batches {
		for _, acct := range []string{"acct", "other"} {
			_, err := s.Events.AppendEvents(ctx, eventBatch(acct, key, turn.Revision(i+1), perBatch, at(i)))
			must(b, err, "seed")
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
	s := newStore(b)
	ctx := b.Context()
	var seeded int
	b.Run(fmt.Sprintf("rows=%d/dispatchers=%d", batch, dispatchers), func(b *testing.B) {
		// Fresh due rows for every claim of this run (the framework runs this function several
		// times, and earlier runs consumed theirs), inserted in bulk: the claim is measured, not
		// the enqueue.
		need := (b.N + dispatchers) * batch
		_, err := s.pool.Exec(ctx, `INSERT INTO `+s.schema+`.turn_outbox
			(outbox_id, command_id, destination, payload, idempotency_key, status, created_at)
			SELECT gen_random_uuid(), gen_random_uuid(), 'bench', '{}', 'k-' || ($1::int + i), 'pending',
			    'epoch'::timestamptz + make_interval(secs => $1::int + i)
			FROM generate_series(1, $2::int) i`, seeded, need)
		must(b, err, "seed")
		seeded += need
		b.SetParallelism((dispatchers + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
		var worker atomic.Int64
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			name := "dispatcher-" + strconv.FormatInt(worker.Add(1), 10)
			for pb.Next() {
				got, err := s.Outbox.ClaimDue(ctx, at(1<<30), batch, name)
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

// BenchmarkBeginCommand admits a command: fresh (a new idempotency key, the row is inserted) and
// replay (a known key, the stored entry returned, nothing written).
func BenchmarkBeginCommand(b *testing.B) {
	s := newStore(b)
	ctx := b.Context()
	entry := func(key string) turn.JournalEntry {
		return turn.JournalEntry{CommandID: turn.NewID(), AccountID: "acct", IdempotencyKey: key,
			TurnID: turn.NewID(), CaseRef: turn.CaseRef{Workflow: "trip", CaseID: "c", ExpectedRevision: 1},
			CommandType: "trip.book", CommandPayload: []byte(`{"train":"9:40","to":"Lyon"}`),
			Origin: []byte(`{"kind":"user_turn"}`), Status: turn.JournalPending, CreatedAt: at(0)}
	}
	b.Run("fresh", func(b *testing.B) {
		for b.Loop() {
			a, err := s.Journal.BeginCommand(ctx, entry(turn.NewID().String()))
			if err != nil || !a.Fresh {
				b.Fatalf("admission %+v, %v", a, err)
			}
		}
	})
	b.Run("replay", func(b *testing.B) {
		_, err := s.Journal.BeginCommand(ctx, entry("known-key"))
		must(b, err, "first admission")
		for b.Loop() {
			a, err := s.Journal.BeginCommand(ctx, entry("known-key"))
			if err != nil || a.Fresh {
				b.Fatalf("admission %+v, %v", a, err)
			}
		}
	})
}
