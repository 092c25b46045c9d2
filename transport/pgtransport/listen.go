package pgtransport

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Wait implements transport.Backend. The first call starts the listener (a connection of its
// own, outside the pool) and waits until it is listening, so a publish committed after Wait has
// begun is never missed because the listener was not yet there. Without a notification Wait
// returns after the poll interval.
func (b *Backend) Wait(ctx context.Context) error {
	if b.closed.Load() {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if b.cfg.listen {
		b.listenOnce.Do(func() { go b.listen() })
		select {
		case <-b.listenReady:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := b.sig.Wait(ctx, b.cfg.poll); err != nil {
		if b.closed.Load() {
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
func (b *Backend) listen() {
	defer close(b.listenDone)
	ready := false
	markReady := func() {
		if !ready {
			ready = true
			close(b.listenReady)
		}
	}
	defer markReady()
	ctx := b.stopCtx
	for ctx.Err() == nil {
		conn, err := b.connectListener(ctx)
		markReady()
		if err == nil {
			for {
				if _, err = conn.WaitForNotification(ctx); err != nil {
					break
				}
				b.sig.Notify()
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		b.sig.Notify()
		pause := time.NewTimer(min(b.cfg.poll, time.Second))
		select {
		case <-ctx.Done():
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}

func (b *Backend) connectListener(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := b.pool.Config().ConnConfig.Copy()
	cfg.RuntimeParams["application_name"] = listenerName
	conn, err := pgx.ConnectConfig(cctx, cfg)
	if err != nil {
		return nil, err
	}
	if _, err := conn.Exec(cctx, "LISTEN "+pgx.Identifier{b.channel}.Sanitize()); err != nil {
		_ = conn.Close(context.Background())
		return nil, err
	}
	return conn, nil
}
