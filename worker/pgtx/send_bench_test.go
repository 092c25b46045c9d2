package pgtx_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/worker"
)

// BenchmarkClientSend measures worker.Client.Send on PostgreSQL, each send to an idle execution
// (nothing queued: the transport holds no group for it, the common case of an event from
// outside) whose context is about 1 KB. "load+publish" is what Send did before it stopped
// loading (Store.Load for the priority and ErrNotFound, then Transport.Publish), "sender" is Send
// through pgtx (one statement that checks and prices), "publish" is Send without a Sender (no
// check; the queue opens at priority 0). Each runs in a schema of its own.
func BenchmarkClientSend(b *testing.B) {
	for _, mode := range []string{"load+publish", "sender", "publish"} {
		b.Run(mode, func(b *testing.B) {
			ctx := context.Background()
			db, s, tr, _ := setup(b)
			ids := make([]string, b.N)
			now := time.Now().UTC().Truncate(time.Microsecond)
			note := []byte(`{"note":"` + strings.Repeat("x", 1000) + `"}`)
			for lo := 0; lo < b.N; lo += stead.MaxBatch {
				var items []stead.CommitItem
				for i := lo; i < min(lo+stead.MaxBatch, b.N); i++ {
					ids[i] = fmt.Sprintf("x-%d", i)
					items = append(items, stead.CommitItem{Execution: &stead.Execution{ID: ids[i], DefinitionID: "d",
						Status: stead.StatusRunning, Priority: 3, Context: note, CreatedAt: now, UpdatedAt: now}})
				}
				if _, err := s.CommitBatch(ctx, items); err != nil {
					b.Fatal(err)
				}
			}
			c := &worker.Client{Store: s, Transport: tr}
			if mode == "sender" {
				c.Sender = db
			}
			b.ResetTimer()
			for i := range b.N {
				var err error
				if mode == "load+publish" {
					var exe *stead.Execution
					if exe, err = s.Load(ctx, ids[i]); err == nil {
						err = tr.Publish(ctx, ids[i], stead.Event{ID: worker.NewEventID(), Kind: "tick", CreatedAt: now}, exe.Priority)
					}
				} else {
					_, err = c.Send(ctx, ids[i], stead.Event{Kind: "tick"})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
