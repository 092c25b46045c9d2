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
// outside) whose context is about 1 KB, three ways taken in turn on one schema, so that a busy
// machine weighs on all three alike; each is reported per send:
//   - load+publish-ns/send: what Send did before it stopped loading (Store.Load for the priority
//     and ErrNotFound, then Transport.Publish);
//   - sender-ns/send: Send through pgtx (one statement that checks and prices);
//   - publish-ns/send: Send without a Sender (no check; the queue opens at priority 0).
func BenchmarkClientSend(b *testing.B) {
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
	plain := &worker.Client{Store: s, Transport: tr}
	checked := &worker.Client{Store: s, Transport: tr, Sender: db}
	var spent [3]time.Duration
	var count [3]int
	b.ResetTimer()
	for i := range b.N {
		mode := i % 3
		start := time.Now()
		var err error
		switch mode {
		case 0:
			var exe *stead.Execution
			if exe, err = s.Load(ctx, ids[i]); err == nil {
				err = tr.Publish(ctx, ids[i], stead.Event{ID: worker.NewEventID(), Kind: "tick", CreatedAt: now}, exe.Priority)
			}
		case 1:
			_, err = checked.Send(ctx, ids[i], stead.Event{Kind: "tick"})
		case 2:
			_, err = plain.Send(ctx, ids[i], stead.Event{Kind: "tick"})
		}
		if err != nil {
			b.Fatal(err)
		}
		spent[mode] += time.Since(start)
		count[mode]++
	}
	for mode, name := range []string{"load+publish", "sender", "publish"} {
		if count[mode] > 0 {
			b.ReportMetric(float64(spent[mode].Nanoseconds())/float64(count[mode]), name+"-ns/send")
		}
	}
}
