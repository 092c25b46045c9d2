package pgdb

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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
// deadline one of timeout: queries, batches, copies and prepares. Without it a call on a connection whose server went silent
// waits for TCP to give up, which a proxy in between, or the kernel's defaults, can make last
// for minutes; with it the call fails within timeout, as ErrTimeout (the outcome is unknown) or
// ErrUnavailable (nothing was sent), the connection is closed, and the next call reconnects.
//
// It wraps whatever tracer the connection config had, calling it inside the deadline.
type deadlines struct {
	timeout time.Duration // 0: add none, only report silent hosts
	hosts   *hosts
	next    pgx.QueryTracer
}

func newDeadlines(timeout time.Duration, h *hosts, next pgx.QueryTracer) *deadlines {
	return &deadlines{timeout: timeout, hosts: h, next: next}
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

func (d *deadlines) TraceQueryStart(ctx context.Context, c *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	ctx = d.start(ctx)
	if d.next != nil {
		ctx = d.next.TraceQueryStart(ctx, c, data)
	}
	return ctx
}

func (d *deadlines) TraceQueryEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceQueryEndData) {
	if d.next != nil {
		d.next.TraceQueryEnd(ctx, c, data)
	}
	d.end(ctx, c, data.Err)
}

func (d *deadlines) TraceBatchStart(ctx context.Context, c *pgx.Conn, data pgx.TraceBatchStartData) context.Context {
	ctx = d.start(ctx)
	if t, ok := d.next.(pgx.BatchTracer); ok {
		ctx = t.TraceBatchStart(ctx, c, data)
	}
	return ctx
}

func (d *deadlines) TraceBatchQuery(ctx context.Context, c *pgx.Conn, data pgx.TraceBatchQueryData) {
	if t, ok := d.next.(pgx.BatchTracer); ok {
		t.TraceBatchQuery(ctx, c, data)
	}
}

func (d *deadlines) TraceBatchEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceBatchEndData) {
	if t, ok := d.next.(pgx.BatchTracer); ok {
		t.TraceBatchEnd(ctx, c, data)
	}
	d.end(ctx, c, data.Err)
}

func (d *deadlines) TraceCopyFromStart(ctx context.Context, c *pgx.Conn, data pgx.TraceCopyFromStartData) context.Context {
	ctx = d.start(ctx)
	if t, ok := d.next.(pgx.CopyFromTracer); ok {
		ctx = t.TraceCopyFromStart(ctx, c, data)
	}
	return ctx
}

func (d *deadlines) TraceCopyFromEnd(ctx context.Context, c *pgx.Conn, data pgx.TraceCopyFromEndData) {
	if t, ok := d.next.(pgx.CopyFromTracer); ok {
		t.TraceCopyFromEnd(ctx, c, data)
	}
	d.end(ctx, c, data.Err)
}

func (d *deadlines) TracePrepareStart(ctx context.Context, c *pgx.Conn, data pgx.TracePrepareStartData) context.Context {
	ctx = d.start(ctx)
	if t, ok := d.next.(pgx.PrepareTracer); ok {
		ctx = t.TracePrepareStart(ctx, c, data)
	}
	return ctx
}

func (d *deadlines) TracePrepareEnd(ctx context.Context, c *pgx.Conn, data pgx.TracePrepareEndData) {
	if t, ok := d.next.(pgx.PrepareTracer); ok {
		t.TracePrepareEnd(ctx, c, data)
	}
	d.end(ctx, c, data.Err)
}

func (d *deadlines) TraceConnectStart(ctx context.Context, data pgx.TraceConnectStartData) context.Context {
	ctx = context.WithValue(ctx, connectingKey{}, true) // what the dialer tells a connect by
	if t, ok := d.next.(pgx.ConnectTracer); ok {
		ctx = t.TraceConnectStart(ctx, data)
	}
	return ctx
}

func (d *deadlines) TraceConnectEnd(ctx context.Context, data pgx.TraceConnectEndData) {
	if t, ok := d.next.(pgx.ConnectTracer); ok {
		t.TraceConnectEnd(ctx, data)
	}
}

// TraceAcquireStart adds no deadline: an acquire that waits for a free connection waits on the
// pool's other calls, which have theirs, and one that connects or pings is bounded by
// ConnectTimeout and PingTimeout. A deadline here would only fail calls that sent nothing
// because the pool was busy.
func (d *deadlines) TraceAcquireStart(ctx context.Context, p *pgxpool.Pool, data pgxpool.TraceAcquireStartData) context.Context {
	if t, ok := d.next.(pgxpool.AcquireTracer); ok {
		ctx = t.TraceAcquireStart(ctx, p, data)
	}
	return ctx
}

func (d *deadlines) TraceAcquireEnd(ctx context.Context, p *pgxpool.Pool, data pgxpool.TraceAcquireEndData) {
	if t, ok := d.next.(pgxpool.AcquireTracer); ok {
		t.TraceAcquireEnd(ctx, p, data)
	}
}

func (d *deadlines) TraceRelease(p *pgxpool.Pool, data pgxpool.TraceReleaseData) {
	if t, ok := d.next.(pgxpool.ReleaseTracer); ok {
		t.TraceRelease(p, data)
	}
}

var (
	_ pgx.QueryTracer       = (*deadlines)(nil)
	_ pgx.BatchTracer       = (*deadlines)(nil)
	_ pgx.CopyFromTracer    = (*deadlines)(nil)
	_ pgx.PrepareTracer     = (*deadlines)(nil)
	_ pgx.ConnectTracer     = (*deadlines)(nil)
	_ pgxpool.AcquireTracer = (*deadlines)(nil)
	_ pgxpool.ReleaseTracer = (*deadlines)(nil)
)
