package pgtransport

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Wait implements transport.Transport. The first call starts the listener (a connection of its
// own, outside the pool) and waits until it is listening, so a publish committed after Wait has
// begun is never missed because the listener was not yet there. Without a notification Wait
// returns after the poll interval.
func (t *Transport) Wait(ctx context.Context) error {
	if t.closed.Load() {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t.cfg.listen {
		t.listenOnce.Do(func() { go t.listen() })
		select {
		case <-t.listenReady:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := t.sig.Wait(ctx, t.cfg.poll); err != nil {
		if t.closed.Load() {
			return errClosed
		}
		return err
	}
	return nil
}

// listenerName is the application_name of the listener's connection, to tell it apart in
// pg_stat_activity.
const listenerName = "stead-transport-listener"

// listen holds a LISTEN connection until Close, turning every notification into a wake-up. When
// the connection fails it wakes every waiter (a notification may have been lost), pauses (at most
// a second) and connects again.
func (t *Transport) listen() {
	defer close(t.listenDone)
	ready := false
	markReady := func() {
		if !ready {
			ready = true
			close(t.listenReady)
		}
	}
	defer markReady()
	ctx := t.stopCtx
	for ctx.Err() == nil {
		conn, err := t.connectListener(ctx)
		markReady()
		if err == nil {
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				t.sig.Notify()
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		t.sig.Notify()
		pause := time.NewTimer(min(t.cfg.poll, time.Second))
		select {
		case <-ctx.Done():
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}

func (t *Transport) connectListener(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := t.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerName
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{t.channel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}
