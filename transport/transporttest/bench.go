package transporttest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// Opener builds a fresh, empty transport for a benchmark. The benchmark closes it.
type Opener func(b *testing.B) *transport.Transport

// Benchmark runs the transport benchmarks, each on a fresh transport:
//
//   - Publish: one message per call;
//   - PublishBatch100: 100 messages per call (reported per message);
//   - ClaimAck: one Claim and one Ack, the round trip of an unbatched worker step;
//   - ClaimAckBatch100: ClaimBatch of 100 and one AckBatch (reported per message);
//   - ClaimAckParallel: ClaimAck from 4 goroutines per CPU at once;
//   - ClaimAckKeyed, ClaimAckBatch100Keyed: the same over groups spread over 100 flow keys whose
//     limit never binds (transports that limit only): what a declared limit costs.
//
// The backlog for the claim benchmarks is published before the timer starts, spread over 1,000
// groups so that most acks leave their group with messages (the busy case).
func Benchmark(b *testing.B, open Opener) {
	b.Run("Publish", func(b *testing.B) {
		tr := openBench(b, open)
		ctx := context.Background()
		ev := Event("e")
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; b.Loop(); i++ {
			if err := tr.Publish(ctx, fmt.Sprintf("g%d", i%1000), ev, 0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("PublishBatch100", func(b *testing.B) {
		tr := openBench(b, open)
		ctx := context.Background()
		batch := make([]transport.Outgoing, 100)
		for i := range batch {
			batch[i] = transport.Outgoing{Group: fmt.Sprintf("g%d", i), Event: Event("e")}
		}
		b.ReportAllocs()
		b.ResetTimer()
		n := 0
		for b.Loop() {
			if err := tr.PublishBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
			n += len(batch)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/msg")
	})
	b.Run("ClaimAck", func(b *testing.B) {
		tr := openBench(b, open)
		ctx := context.Background()
		fill(b, tr, b.N)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			l, err := tr.Claim(ctx, "w", time.Minute, 0)
			if err != nil || l == nil {
				b.Fatalf("Claim = %v, %v", l, err)
			}
			if err := tr.Ack(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, keyed := range []bool{false, true} {
		name := "ClaimAckBatch100"
		if keyed {
			name += "Keyed"
		}
		b.Run(name, func(b *testing.B) { claimAckBatch(b, open, keyed) })
	}
	b.Run("ClaimAckKeyed", func(b *testing.B) {
		tr := openBench(b, open)
		if !tr.CanLimit() {
			b.Skip("the transport does not limit")
		}
		ctx := context.Background()
		fillKeyed(b, tr, b.N, true)
		b.ReportAllocs()
		b.ResetTimer()
		for range b.N {
			l, err := tr.Claim(ctx, "w", time.Minute, 0)
			if err != nil || l == nil {
				b.Fatalf("Claim = %v, %v", l, err)
			}
			if err := tr.Ack(ctx, l); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ClaimAckParallel", func(b *testing.B) {
		tr := openBench(b, open)
		ctx := context.Background()
		fill(b, tr, b.N)
		b.SetParallelism(4)
		b.ReportAllocs()
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				// Another goroutine may hold the last claimable groups for a moment.
				for {
					l, err := tr.Claim(ctx, "w", time.Minute, 0)
					if err != nil {
						b.Error(err)
						return
					}
					if l == nil {
						continue
					}
					if err := tr.Ack(ctx, l); err != nil {
						b.Error(err)
						return
					}
					break
				}
			}
		})
	})
}

// claimAckBatch is ClaimAckBatch100, over unkeyed or keyed groups.
func claimAckBatch(b *testing.B, open Opener, keyed bool) {
	tr := openBench(b, open)
	if keyed && !tr.CanLimit() {
		b.Skip("the transport does not limit")
	}
	ctx := context.Background()
	fillKeyed(b, tr, b.N*100, keyed)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		ls, err := tr.ClaimBatch(ctx, "w", time.Minute, 0, 100)
		if err != nil || len(ls) != 100 {
			b.Fatalf("ClaimBatch = %d leases, %v", len(ls), err)
		}
		if err := tr.AckBatch(ctx, ls); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*100), "ns/msg")
}

func openBench(b *testing.B, open Opener) *transport.Transport {
	b.Helper()
	tr := open(b)
	b.Cleanup(func() { tr.Close() })
	return tr
}

// fill publishes n messages over 1,000 groups, in batches.
func fill(b *testing.B, tr *transport.Transport, n int) {
	b.Helper()
	fillKeyed(b, tr, n, false)
}

// fillKeyed is fill, with each group keyed (keyed) under one of 100 flow keys whose limit of a
// million never binds.
func fillKeyed(b *testing.B, tr *transport.Transport, n int, keyed bool) {
	b.Helper()
	ctx := context.Background()
	batch := make([]transport.Outgoing, 0, transport.MaxBatch)
	ev := stead.Event{ID: "e", Kind: "k"}
	for i := range n {
		o := transport.Outgoing{Group: fmt.Sprintf("g%d", i%1000), Event: ev}
		if keyed {
			o.Flow = transport.Flow{Key: fmt.Sprintf("k%d", i%100), Concurrency: 1 << 20}
		}
		batch = append(batch, o)
		if len(batch) == cap(batch) || i == n-1 {
			if err := tr.PublishBatch(ctx, batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}
