package pgtransport

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/transport"
	"github.com/steadhq/stead/transport/transporttest"
)

// TestCloseStopsListener checks that the listener goroutine, started by the first Wait, has
// returned (and closed its connection) by the time Close returns.
func TestCloseStopsListener(t *testing.T) {
	t.Parallel()
	tr, b := openInternal(t, pgdbtest.Schema(t), WithPollInterval(time.Hour))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_ = tr.Wait(ctx) // starts the listener
	select {
	case <-b.listenReady:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener never got ready")
	}
	select {
	case <-b.listenDone:
		t.Fatal("listener stopped before Close")
	default:
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-b.listenDone:
	default:
		t.Fatal("Close returned with the listener goroutine still running")
	}
}

// TestCloseWithoutListener checks that Close of a transport that never waited returns at once
// and that no listener starts afterwards.
func TestCloseWithoutListener(t *testing.T) {
	t.Parallel()
	tr, b := openInternal(t, pgdbtest.Schema(t))
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	<-b.listenDone
	if err := b.Wait(context.Background()); err == nil {
		t.Fatal("the backend's Wait after Close succeeded")
	}
}

// TestListenerReconnects kills the listener's connection and checks that waiters are woken and
// that notifications flow again once it has reconnected.
func TestListenerReconnects(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	tr, b := openInternal(t, schema, WithPollInterval(time.Hour))
	defer tr.Close()
	ctx := context.Background()
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	_ = tr.Wait(short)
	cancel()
	select {
	case <-b.listenReady:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener never got ready")
	}

	waited := make(chan error, 1)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	go func() { waited <- tr.Wait(wctx) }()
	// Terminate every listener of this transport's channel (other tests' listeners have other
	// channels; the query finds ours by the channel it listens on).
	var killed int
	err := b.pool.QueryRow(ctx, `
		SELECT count(*) FROM (
			SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE application_name = $1 AND query = $2) k`,
		listenerName, "LISTEN "+quoteIdent(b.channel)).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d listeners (%v), want 1", killed, err)
	}
	if err := <-waited; err != nil {
		t.Fatalf("Wait during the outage = %v, want a wake-up", err)
	}
	// Once reconnected, a publish from elsewhere wakes a waiter again. Publish until one does:
	// the reconnect takes up to a second.
	clock := transporttest.NewClock(transporttest.Start)
	other, _ := openInternal(t, schema, WithClock(clock.Now))
	defer other.Close()
	// One waiter stays blocked while new groups are published (each creation notifies) until it
	// wakes; with an hour's poll interval only a notification can wake it. The empty claim first
	// is what a worker does, and it consumes the outage's wake-up.
	if l, err := tr.Claim(ctx, "w", time.Minute, 0); err != nil || l != nil {
		t.Fatalf("Claim = %v, %v; want nothing", l, err)
	}
	began := time.Now()
	go func() { waited <- tr.Wait(wctx) }()
	for i := 0; ; i++ {
		if err := other.Publish(ctx, fmt.Sprintf("G%d", i), transporttest.Event("e"), 0); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-waited:
			if err != nil {
				t.Fatalf("Wait after the reconnect = %v", err)
			}
			t.Logf("woken %v after the outage, at publish %d", time.Since(began), i+1)
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func quoteIdent(s string) string { return `"` + s + `"` }

// TestWaitWakesOnNotify checks that LISTEN/NOTIFY wakes a waiter when another pool publishes. The
// poll interval is an hour, so only the notification can end the wait before the deadline.
func TestWaitWakesOnNotify(t *testing.T) {
	t.Parallel()
	schema := pgdbtest.Schema(t)
	waiter, waiterBackend := openInternal(t, schema, WithPollInterval(time.Hour))
	defer waiter.Close()
	publisher, _ := openInternal(t, schema)
	defer publisher.Close()
	ctx := context.Background()

	// Start the listener, wait until it listens, and let a claim find nothing, as a worker's
	// loop would.
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	_ = waiter.Wait(short)
	cancel()
	select {
	case <-waiterBackend.listenReady:
	case <-time.After(30 * time.Second):
		t.Fatal("the listener never got ready")
	}
	if l, err := waiter.Claim(ctx, "w", time.Minute, 0); err != nil || l != nil {
		t.Fatalf("Claim = %v, %v; want nothing", l, err)
	}
	for round, step := range []func() error{
		func() error { return publisher.Publish(ctx, "G", transporttest.Event("e1"), 0) }, // creates the group
		func() error {
			return publisher.PublishBatch(ctx, []transport.Outgoing{{Group: "H", Event: transporttest.Event("h1")}})
		},
	} {
		done := make(chan error, 1)
		wctx, cancel := context.WithTimeout(ctx, time.Minute)
		go func() { done <- waiter.Wait(wctx) }()
		if err := step(); err != nil {
			t.Fatalf("round %d: publish: %v", round, err)
		}
		if err := <-done; err != nil {
			t.Fatalf("round %d: Wait = %v, want a wake-up by NOTIFY", round, err)
		}
		cancel()
		if l, err := waiter.Claim(ctx, "w", time.Minute, 0); err != nil || l == nil {
			t.Fatalf("round %d: Claim after wake-up = %v, %v", round, l, err)
		}
		if l, err := waiter.Claim(ctx, "w", time.Minute, 0); err != nil || l != nil {
			t.Fatalf("round %d: second Claim = %v, %v; want nothing", round, l, err)
		}
	}
}

// openInternal returns a transport on schema with a pool of its own, and its backend; the caller
// closes the transport, the test's end the pool.
func openInternal(t *testing.T, schema string, opts ...Option) (*transport.Transport, *Backend) {
	t.Helper()
	pgdbtest.Pool(t) // skip (or fail under STEAD_REQUIRE_POSTGRES) without a server
	pool, err := pgdb.Open(context.Background(), pgdbtest.URL(), pgdb.Config{MaxConns: 4, ConnectAttempts: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	tr, err := New(context.Background(), pool, append([]Option{WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return tr, tr.Backend().(*Backend)
}
