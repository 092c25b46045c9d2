package pgtransport

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/steadhq/stead/internal/check"
	"github.com/steadhq/stead/pgdb"
)

// listenerConfig returns the connection settings of the listener, or nil (and cfg.listen turned
// off) when it cannot work: LISTEN through PgBouncer in transaction mode succeeds but receives
// nothing, since the session that listened goes back to PgBouncer's pool at the end of the
// statement. A pool opened in PgBouncer mode sends every statement unprepared (exec mode), which
// is how the listener tells that it would go through PgBouncer.
func listenerConfig(pool *pgxpool.Pool, cfg *config) (*pgx.ConnConfig, error) {
	if !cfg.listen {
		return nil, nil
	}
	if cfg.listenURL != "" {
		c, err := pgdb.ParseConnConfig(cfg.listenURL, pgdb.Config{})
		if err != nil {
			return nil, check.Invalidf("pgtransport: listen URL: %v", err)
		}
		return c, nil
	}
	c := pool.Config().ConnConfig.Copy()
	switch c.DefaultQueryExecMode {
	case pgx.QueryExecModeExec, pgx.QueryExecModeSimpleProtocol:
		cfg.listen = false
		cfg.log.Warn("pgtransport: the pool is in PgBouncer mode and no listen URL was given: "+
			"LISTEN through PgBouncer receives nothing, so Wait polls every poll interval; "+
			"give pgtransport.WithListenURL the PostgreSQL server's own address for wake-ups "+
			"within milliseconds", slog.Duration("poll", cfg.poll))
		return nil, nil
	}
	return c, nil
}

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

// listen holds a LISTEN connection until Close, turning every notification into a wake-up. A
// listening connection is silent by design, so after listenCheck without a notification it pings
// the server (bounded by listenPing): a server that went silent (a dead host, a partition, a
// black-holed primary whose standby was promoted) costs at most those two, not the minutes TCP
// takes to notice. When the connection fails it wakes every waiter (a notification may have been
// lost), pauses and connects again: the pause grows from 100 ms to at most a second (never past the poll interval)
// while connecting keeps failing, with jitter, so that the listeners of a fleet do not reconnect
// in step after a restart of the server.
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
	failures := 0
	for ctx.Err() == nil {
		conn, err := b.connectListener(ctx)
		markReady()
		if err != nil {
			failures++
			if failures == 1 {
				b.cfg.log.Warn("pgtransport: listener cannot connect; Wait polls until it can", slog.Any("err", err))
			}
		} else {
			if failures > 0 {
				b.cfg.log.Info("pgtransport: listener connected again")
			}
			failures = 0
			for {
				if err = b.waitNotification(ctx, conn); err != nil {
					if ctx.Err() == nil {
						b.cfg.log.Warn("pgtransport: listener lost its connection; reconnecting", slog.Any("err", err))
					}
					break
				}
			}
			closeCtx, cancel := context.WithTimeout(context.Background(), time.Second)
			_ = conn.Close(closeCtx)
			cancel()
		}
		if ctx.Err() != nil {
			return
		}
		b.sig.Notify()
		pause := time.NewTimer(listenPause(failures, b.cfg.poll))
		select {
		case <-ctx.Done():
			pause.Stop()
			return
		case <-pause.C:
		}
	}
}

// waitNotification waits up to listenCheck for a notification, turning it into a wake-up; when
// none comes it pings the server, and returns the error that makes the connection unusable.
func (b *Backend) waitNotification(ctx context.Context, conn *pgx.Conn) error {
	wctx, cancel := context.WithTimeout(ctx, b.cfg.listenCheck)
	_, err := conn.WaitForNotification(wctx)
	cancel()
	if err == nil {
		b.sig.Notify()
		return nil
	}
	if ctx.Err() != nil || !errors.Is(err, context.DeadlineExceeded) || conn.IsClosed() {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, b.cfg.listenPing)
	defer cancel()
	return conn.Ping(pctx)
}

// listenPause is how long the listener waits before it connects again, after failures failed
// attempts in a row (0: the connection it had broke): 100 ms doubled per failure, capped at a
// second and at the poll interval, then jittered down by up to half.
func listenPause(failures int, poll time.Duration) time.Duration {
	d := 100 * time.Millisecond << min(failures, 4)
	d = min(d, time.Second, poll)
	return d/2 + rand.N(d/2+1)
}

func (b *Backend) connectListener(ctx context.Context) (*pgx.Conn, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cfg := b.listenConn.Copy()
	cfg.RuntimeParams["application_name"] = listenerName
	if b.cfg.listenURL == "" {
		// The pool's server: connect as the pool does, in the order of hosts it keeps (pgdb.Open
		// tries the host that last took writes first and silent hosts last) and with whatever
		// else the application's BeforeConnect sets, such as a rotated password.
		if before := b.pool.Config().BeforeConnect; before != nil {
			if err := before(cctx, cfg); err != nil {
				return nil, err
			}
		}
	}
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
