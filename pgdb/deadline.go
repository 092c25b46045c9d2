package pgdb

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/multitracer"
)

// WithoutCallTimeout returns a context under which a pool opened by Open gives no call a
// deadline of its own: for work that may rightly run long without one (a migration that builds
// an index, a bulk export). A deadline ctx carries is honoured either way.
func WithoutCallTimeout(ctx context.Context) context.Context {
	return context.WithValue(ctx, noTimeoutKey{}, true)
}

type noTimeoutKey struct{}

// cancelKey holds the cancel func of the deadline a tracer start added, for its end to release.
// A nested start that adds none shadows it with nil, so that its end cannot cancel the outer
// call's deadline.
type cancelKey struct{}

// deadlines is the pgx tracer that gives every call on a pool's connections whose context has no
// deadline one of timeout: queries, batches, copies and prepares. Without it a call on a
// connection whose server went silent waits for TCP to give up, which a proxy in between, or the
// kernel's defaults, can make last for minutes; with it the call fails within timeout, as
// ErrTimeout (the outcome is unknown) or ErrUnavailable (nothing was sent), the connection is
// closed, and the next call reconnects.
//
// A tracer the connection config had already is kept, ahead of this one (withDeadlines).
type deadlines struct {
	timeout time.Duration // 0: add none, only report silent hosts
	hosts   *hosts
}

// withDeadlines returns the tracer of a connection config whose tracer was next (nil: none):
// deadlines, behind next in a pgx multitracer, so that next's start sees the call as its caller
// made it and next's end runs before the deadline is released.
func withDeadlines(timeout time.Duration, h *hosts, next pgx.QueryTracer) pgx.QueryTracer {
	d := &deadlines{timeout: timeout, hosts: h}
	if next == nil {
		return d
	}
	return multitracer.New(next, d)
}

// start returns ctx with the call's deadline, if it needs one.
func (d *deadlines) start(ctx context.Context) context.Context {
	if _, ok := ctx.Deadline(); ok || d.timeout <= 0 || ctx.Value(noTimeoutKey{}) != nil {
		if ctx.Value(cancelKey{}) != nil {
			return context.WithValue(ctx, cancelKey{}, context.CancelFunc(nil))
		}
		return ctx
	}
	ctx, cancel := context.WithTimeout(ctx, d.timeout)
	return context.WithValue(ctx, cancelKey{}, cancel)
}

// end releases the deadline start added, and reports the host of c as silent when a deadline
// (the one start added or the caller's) ended the call.
func (d *deadlines) end(ctx context.Context, c *pgx.Conn, err error) {
	if err != nil && c != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		if a := hostOf(c.PgConn().Conn()); a != "" {
			d.hosts.wentSilent(a)
		}
	}
	if cancel, _ := ctx.Value(cancelKey{}).(context.CancelFunc); cancel != nil {
		cancel()
	}
}

func (d *deadlines) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return d.start(ctx)
}

func (d *deadlines) TraceQueryEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceQueryEndData) {
	d.end(ctx, c, data.Err)
}

func (d *deadlines) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return d.start(ctx)
}

func (d *deadlines) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}

func (d *deadlines) TraceBatchEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceBatchEndData) {
	d.end(ctx, c, data.Err)
}

func (d *deadlines) TraceCopyFromStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceCopyFromStartData) context.Context {
	return d.start(ctx)
}

func (d *deadlines) TraceCopyFromEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceCopyFromEndData) {
	d.end(ctx, c, data.Err)
}

func (d *deadlines) TracePrepareStart(ctx context.Context, _ *pgx.Conn, _ pgx.TracePrepareStartData) context.Context {
	return d.start(ctx)
}

func (d *deadlines) TracePrepareEnd(ctx context.Context, c *pgx.Conn, data pgx.TracePrepareEndData) {
	d.end(ctx, c, data.Err)
}

func (d *deadlines) TraceConnectStart(ctx context.Context, _ pgx.TraceConnectStartData) context.Context {
	return context.WithValue(ctx, connectingKey{}, true) // what the dialer tells a connect by
}

func (d *deadlines) TraceConnectEnd(context.Context, pgx.TraceConnectEndData) {}

var (
	_ pgx.BatchTracer    = (*deadlines)(nil)
	_ pgx.CopyFromTracer = (*deadlines)(nil)
	_ pgx.PrepareTracer  = (*deadlines)(nil)
	_ pgx.ConnectTracer  = (*deadlines)(nil)
)
