package memturn_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
)

func benchBatch(account string, n int) turn.EventBatch {
	b := turn.EventBatch{AccountID: account, CaseKey: turn.CaseKey{Workflow: "w", CaseID: "c"}, CommandID: turn.NewID(), Revision: 1}
	for range n {
		b.Events = append(b.Events, turn.NewEvent{EventID: turn.NewID(), EventType: "bench.happened", OccurredAt: t0,
			Payload: json.RawMessage(`{"index":1,"note":"a small payload"}`)})
	}
	return b
}

// A commit bundle carrying n events plus a replay record and a turn phase.
func BenchmarkCommitBundle(b *testing.B) {
	for _, n := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			ctx := context.Background()
			s := memturn.New()
			conv, tid := turn.NewID(), turn.NewID()
			if err := s.Conversations.CreateConversation(ctx, turn.Conversation{ID: conv, AccountID: "a", CreatedAt: t0}); err != nil {
				b.Fatal(err)
			}
			if err := s.Conversations.AppendUserTurn(ctx, turn.UserTurn{ReceivedAt: t0, Input: turn.TurnInput{TurnID: tid, ConversationID: conv, Actor: turn.Actor{AccountID: "a"}}}); err != nil {
				b.Fatal(err)
			}
			bundles := make([]turn.Bundle, b.N)
			for i := range bundles {
				replay := turn.ReceivedReplay(tid, conv, "a", t0)
				bundles[i] = turn.Bundle{Events: []turn.EventBatch{benchBatch("a", n)}, ReplayRecord: &replay,
					TurnPhase: &turn.PhaseUpdate{TurnID: tid, Phase: turn.PhaseCommitted}}
			}
			b.ResetTimer()
			for i := range b.N {
				if _, err := s.Commits.Commit(ctx, "a", bundles[i]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// One page of the event stream from the middle of a 10 000-event journal.
func BenchmarkReadFrom(b *testing.B) {
	ctx := context.Background()
	s := memturn.New()
	for range 100 {
		if _, err := s.Events.AppendEvents(ctx, benchBatch("a", 100)); err != nil {
			b.Fatal(err)
		}
		if _, err := s.Events.AppendEvents(ctx, benchBatch("other", 100)); err != nil {
			b.Fatal(err)
		}
	}
	middle, err := s.Events.ReadFrom(ctx, "a", turn.Start, 5000)
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{32, 128, 512} {
		b.Run(fmt.Sprintf("page=%d", n), func(b *testing.B) {
			for range b.N {
				page, err := s.Events.ReadFrom(ctx, "a", middle.Next, n)
				if err != nil || len(page.Events) != n {
					b.Fatal(len(page.Events), err)
				}
			}
		})
	}
}

// 8 dispatchers claiming 16 due rows at a time from a refilled outbox, settling each claim.
func BenchmarkClaimDue(b *testing.B) {
	ctx := context.Background()
	s := memturn.New()
	cmd := turn.NewID()
	enqueue := func(n int) {
		for range n {
			id := turn.NewID()
			if err := s.Outbox.Enqueue(ctx, turn.OutboxEntry{OutboxID: id, CommandID: cmd, Destination: "d", IdempotencyKey: id.String(),
				Status: turn.OutboxPending, CreatedAt: t0, Payload: json.RawMessage(`{}`)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		enqueue(8 * 16)
		b.StartTimer()
		var wg sync.WaitGroup
		for w := range 8 {
			wg.Go(func() {
				got, err := s.Outbox.ClaimDue(ctx, time.Unix(100, 0), 16, fmt.Sprintf("worker-%d", w))
				if err != nil {
					b.Error(err)
					return
				}
				for _, e := range got {
					if err := s.Outbox.MarkCompleted(ctx, e.OutboxID); err != nil {
						b.Error(err)
					}
				}
			})
		}
		wg.Wait()
	}
}

// One idempotency admission of a new key.
func BenchmarkBeginCommand(b *testing.B) {
	ctx := context.Background()
	s := memturn.New()
	tid := turn.NewID()
	entries := make([]turn.JournalEntry, b.N)
	for i := range entries {
		id := turn.NewID()
		entries[i] = turn.JournalEntry{CommandID: id, AccountID: "a", IdempotencyKey: id.String(), TurnID: tid,
			CaseRef: turn.CaseRef{Workflow: "w", CaseID: "c"}, CommandType: "t", Status: turn.JournalPending, CreatedAt: t0}
	}
	b.ResetTimer()
	for i := range b.N {
		if adm, err := s.Journal.BeginCommand(ctx, entries[i]); err != nil || !adm.Fresh {
			b.Fatal(adm, err)
		}
	}
}
