package pgstore

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead"
)

// finishListenerName is the application_name of the connection that listens for finished
// executions, to tell it apart in pg_stat_activity.
const finishListenerName = "stead-store-listener"

// finishHub hands the notifications of stead_notify_finished (an execution finished) to the watchers of
// WatchFinished. Its listener starts with the first watch and runs until Close: a store that
// nobody waits on holds no connection for it.
type finishHub struct {
	once      sync.Once
	stop      context.CancelFunc
	ready     chan struct{} // closed after the listener's first attempt to connect
	done      chan struct{} // closed when the listener has returned
	mu        sync.Mutex
	listening bool                                  // the listener holds a connection that LISTENs
	watches   map[string]map[chan struct{}]struct{} // by execution id
}

func newFinishHub() *finishHub {
	return &finishHub{ready: make(chan struct{}), done: make(chan struct{}),
		watches: map[string]map[chan struct{}]struct{}{}}
}

// WatchFinished implements worker.FinishWatcher: the returned channel receives a value when a
// commit finishes execution id (done, failed or cancelled), or when the listener lost its
// connection and a notification may have been missed. The first call opens the listener's
// connection (outside the pool, with the pool's settings) and waits until it listens. It fails,
// so that the caller polls, when the listener is not connected, and when the pool is in
// PgBouncer mode: LISTEN through PgBouncer in transaction mode receives nothing.
func (b *Backend) WatchFinished(ctx context.Context, id string) (<-chan struct{}, error) {
	if b.closed.Load() {
		return nil, fmt.Errorf("pgstore: watch finished: %w", stead.ErrClosed)
	}
	switch b.pool.Config().ConnConfig.DefaultQueryExecMode {
	case pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol:
		return nil, fmt.Errorf("pgstore: watch finished: the pool is in PgBouncer mode, where LISTEN receives nothing: %w", stead.ErrUnavailable)
	}
	h := b.finish
	h.once.Do(func() {
		lctx, stop := context.WithCancel(context.Background())
		h.stop = stop
		go b.listenFinished(lctx)
	})
	select {
	case <-h.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.listening {
		return nil, fmt.Errorf("pgstore: watch finished: the listener is not connected: %w", stead.ErrUnavailable)
	}
	set := h.watches[id]
	if set == nil {
		set = map[chan struct{}]struct{}{}
		h.watches[id] = set
	}
	set[ch] = struct{}{}
	context.AfterFunc(ctx, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(set, ch)
		if len(h.watches[id]) == 0 {
			delete(h.watches, id)
		}
	})
	return ch, nil
}

// wake tells the watchers of id (or, with all, every watcher) to look again.
func (h *finishHub) wake(id string, all bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	poke := func(set map[chan struct{}]struct{}) {
		for ch := range set {
			select {
			case ch <- struct{}{}:
			default: // a wake-up is already pending
			}
		}
	}
	if all {
		for _, set := range h.watches {
			poke(set)
		}
		return
	}
	poke(h.watches[id])
}

func (h *finishHub) setListening(on bool) {
	h.mu.Lock()
	h.listening = on
	h.mu.Unlock()
}

// close stops the listener, if it ever started, and waits for it.
func (h *finishHub) close() {
	h.once.Do(func() { close(h.ready); close(h.done) }) // never started: it never will
	if h.stop != nil {
		h.stop()
	}
	<-h.done
}

// listenFinished holds a LISTEN connection until Close. When the connection fails it marks the
// hub not listening (new watches fail, so their callers poll), wakes every watcher (a
// notification may have been lost), pauses from 100 ms up to a second with jitter, and connects
// again.
func (b *Backend) listenFinished(ctx context.Context) {
	h := b.finish
	defer close(h.done)
	first := true
	markReady := func() {
		if first {
			first = false
			close(h.ready)
		}
	}
	defer markReady()
	failures := 0
	for ctx.Err() == nil {
		conn, err := b.connectFinishListener(ctx)
		if err == nil {
			h.setListening(true)
			markReady()
			failures = 0
			for {
				n, werr := conn.WaitForNotification(ctx)
				if werr != nil {
					err = werr
					break
				}
				h.wake(n.Payload, false)
			}
			h.setListening(false)
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
			h.wake("", true)
		} else {
			markReady()
			failures++
		}
		if ctx.Err() != nil {
			return
		}
		if failures == 1 {
			slog.Default().Warn("pgstore: the listener for finished executions cannot connect; Wait polls until it can",
				slog.Any("err", err))
		}
		d := 100 * time.Millisecond << min(failures, 4)
		d = min(d, time.Second)
		pause := time.NewTimer(d/2 + rand.N(d/2+1))
		select {
		case <-ctx.Done():
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}

// connectFinishListener connects with the pool's settings, finds the schema the executions table
// is in (the search_path decides when the store has no schema of its own) and listens on that
// schema's channel, named as stead_notify_finished names it.
func (b *Backend) connectFinishListener(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := b.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = finishListenerName
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, err
	}
	table := pgx.Identifier{"stead_executions"}
	if b.schema != "" {
		table = pgx.Identifier{b.schema, "stead_executions"}
	}
	var schema string
	err = conn.QueryRow(cctx, `SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = $1::regclass`, table.Sanitize()).Scan(&schema)
	if err == nil {
		_, err = conn.Exec(cctx, "LISTEN "+pgx.Identifier{finishChannel(schema)}.Sanitize())
	}
	if err != nil {
		_ = conn.Close(context.Background())
		if errors.Is(err, pgx.ErrNoRows) {
			err = fmt.Errorf("no table %s", table.Sanitize())
		}
		return nil, err
	}
	return conn, nil
}

// finishChannel is the NOTIFY channel of stead_notify_finished for the schema holding the table.
func finishChannel(schema string) string {
	name := "stead_finished." + schema
	if len(name) > 63 {
		sum := md5.Sum([]byte(schema)) // a name, not a secret: what the SQL side computes
		name = "stead_finished." + hex.EncodeToString(sum[:])
	}
	return name
}
