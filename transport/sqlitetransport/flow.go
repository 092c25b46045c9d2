package sqlitetransport

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/steadhq/stead/transport"
)

var _ transport.Limiter = (*backend)(nil)

// A keyed group's row says where it stands: flow_key NULL, unlimited; flow_key set and wait_seq
// NULL, admitted; both set, waiting in its key's queue, out of the claim order. Every change of
// admission happens in the write transaction of the operation that causes it, so it is exact
// across processes sharing the file.

// flowKey is a key's row as one transaction read it, changed in memory and written back whole
// before the transaction commits.
type flowKey struct {
	flow     transport.Flow
	admitted int
	tokens   float64   // the rate bucket at at
	at       time.Time // when tokens was computed
	due      sql.NullInt64
	known    bool // the row exists, or this transaction set its limits
	dirty    bool // to be written back
	// queue is whether groups of the key wait, read when first needed in the transaction and
	// kept true once this transaction queues one.
	queue, queueKnown bool
}

// flows is the flow work of one write transaction: the key rows it read, and the keys whose
// waiting groups it admits, as far as their limits allow, before it commits. The zero value
// (with b and now set) does nothing and costs nothing, which keeps unkeyed operations as they
// were.
type flows struct {
	b     *backend
	now   time.Time
	keys  map[string]*flowKey
	touch []string // keys to admit from, in the order first touched
}

// key reads a key's row once per transaction. A key without a row has no limits.
func (f *flows) key(ctx context.Context, name string) (*flowKey, error) {
	if k := f.keys[name]; k != nil {
		return k, nil
	}
	k := &flowKey{flow: transport.Flow{Key: name}, at: f.now}
	var perUS, at int64
	err := f.b.st.FlowKey.QueryRowContext(ctx, name).Scan(
		&k.flow.Concurrency, &k.flow.Rate, &perUS, &k.admitted, &k.tokens, &at, &k.due, &k.queue)
	k.queueKnown = err == nil
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return nil, err
	default:
		k.known = true
		k.flow.Per = time.Duration(perUS) * time.Microsecond
		k.at = time.UnixMicro(at).UTC()
	}
	if f.keys == nil {
		f.keys = map[string]*flowKey{}
	}
	f.keys[name] = k
	return k, nil
}

// touched marks a key to admit from before the transaction commits.
func (f *flows) touched(name string) {
	for _, n := range f.touch {
		if n == name {
			return
		}
	}
	f.touch = append(f.touch, name)
}

// remember sets the limits of fl's key to fl's, refilling its bucket under the old limits up to
// now and keeping no more tokens than the new rate (a new key's bucket starts full), and makes the
// key the group's unless the group has one.
func (f *flows) remember(ctx context.Context, group string, fl transport.Flow) error {
	k, err := f.key(ctx, fl.Key)
	if err != nil {
		return err
	}
	if k.known {
		k.tokens, k.at = k.flow.Tokens(k.tokens, k.at, f.now), f.now
		k.tokens = min(k.tokens, float64(fl.Rate))
	} else {
		k.tokens, k.at = float64(fl.Rate), f.now
	}
	k.flow, k.known, k.dirty = fl, true, true
	f.touched(fl.Key)
	_, err = f.b.st.FlowRemember.ExecContext(ctx, group, fl.Key)
	return err
}

// enqueue puts a group of key at the back of the key's queue.
func (f *flows) enqueue(ctx context.Context, group, key string) error {
	if _, err := f.b.st.FlowEnqueue.ExecContext(ctx, group, key); err != nil {
		return err
	}
	if k := f.keys[key]; k != nil {
		k.queue, k.queueKnown = true, true
	}
	f.touched(key)
	return nil
}

// enqueueNew admits a group just created with its remembered key, when its key has room and no
// queue, or puts it at the back of the key's queue; it reports whether it admitted the group.
func (f *flows) enqueueNew(ctx context.Context, group string) (bool, error) {
	var (
		key     string
		waiting bool
	)
	if err := f.b.st.FlowGroup.QueryRowContext(ctx, group).Scan(&key, &waiting); err != nil {
		return false, err
	}
	admitted, err := f.admitNow(ctx, key)
	if err != nil || admitted {
		return admitted, err
	}
	return false, f.enqueue(ctx, group, key)
}

// admitNow admits one group of key at once, and reports whether it did, when nothing of the key
// waits and its limits have room: the same admission the queue would give it in this
// transaction, without queueing it first. It is what keeps a limit that does not bind cheap.
func (f *flows) admitNow(ctx context.Context, key string) (bool, error) {
	k, err := f.key(ctx, key)
	if err != nil {
		return false, err
	}
	if c := k.flow.Concurrency; c > 0 && k.admitted >= c {
		return false, nil
	}
	var tokens float64
	if k.flow.Rate > 0 {
		if tokens = k.flow.Tokens(k.tokens, k.at, f.now); tokens < 1 {
			return false, nil
		}
	}
	if !k.queueKnown {
		if err := f.b.st.FlowAnyWaiting.QueryRowContext(ctx, key).Scan(&k.queue); err != nil {
			return false, err
		}
		k.queueKnown = true
	}
	if k.queue {
		return false, nil
	}
	k.admitted++
	if k.flow.Rate > 0 {
		k.tokens, k.at = tokens-1, f.now
	}
	k.dirty = true
	return true, nil
}

// ackKeyed ends the admission of a keyed group whose message was just acked: the group gives its
// place back and, with messages left, is freed and admitted again at once when nothing of its key
// waits and its limits have room, or else queues for another; without messages it is deleted. It
// reports whether the group is claimable again.
func (f *flows) ackKeyed(ctx context.Context, group string) (bool, error) {
	var (
		key  string
		more bool
	)
	if err := f.b.st.AckKeyed.QueryRowContext(ctx, group).Scan(&key, &more); err != nil {
		return false, err
	}
	if !more {
		if _, err := f.b.st.AckKeyedDelete.ExecContext(ctx, group); err != nil {
			return false, err
		}
		return false, f.release(ctx, key)
	}
	if _, err := f.b.st.AckKeyedFree.ExecContext(ctx, micros(f.now), group); err != nil {
		return false, err
	}
	k, err := f.key(ctx, key)
	if err != nil {
		return false, err
	}
	// Its place given back and taken again at once leaves the key's row as it was (but for a
	// rate's token), so that a limit that does not bind writes nothing more than its ack.
	dirty := k.dirty
	k.admitted = max(k.admitted-1, 0)
	admitted, err := f.admitNow(ctx, key)
	if err != nil {
		return false, err
	}
	if admitted {
		k.dirty = dirty || k.flow.Rate > 0
		return true, nil
	}
	k.dirty = true
	return false, f.enqueue(ctx, group, key)
}

// release gives the place of an admitted group of key back.
func (f *flows) release(ctx context.Context, key string) error {
	k, err := f.key(ctx, key)
	if err != nil {
		return err
	}
	k.admitted = max(k.admitted-1, 0)
	k.dirty = true
	f.touched(key)
	return nil
}

// settle admits the waiting groups of the touched keys that their limits allow now, oldest
// first, writes back the key rows that changed, and reports whether it admitted any group.
func (f *flows) settle(ctx context.Context) (bool, error) {
	admitted := false
	for _, name := range f.touch {
		k, err := f.key(ctx, name)
		if err != nil {
			return false, err
		}
		n, err := f.admit(ctx, name, k)
		if err != nil {
			return false, err
		}
		admitted = admitted || n > 0
	}
	f.touch = f.touch[:0]
	for name, k := range f.keys {
		if !k.dirty {
			continue
		}
		_, err := f.b.st.FlowPutKey.ExecContext(ctx, name, k.flow.Concurrency, k.flow.Rate,
			k.flow.Per.Microseconds(), k.admitted, k.tokens, micros(k.at), k.due)
		if err != nil {
			return false, err
		}
		k.dirty = false
	}
	return admitted, nil
}

// admit admits as many waiting groups of k as its limits allow now and sets when the key's next
// rate token is due if only the rate holds a waiting group back. It returns how many it admitted.
func (f *flows) admit(ctx context.Context, name string, k *flowKey) (int, error) {
	room := -1 // no bound
	if c := k.flow.Concurrency; c > 0 {
		room = max(c-k.admitted, 0)
	}
	var tokens float64
	if k.flow.Rate > 0 {
		tokens = k.flow.Tokens(k.tokens, k.at, f.now)
		if t := int(tokens); room < 0 || t < room {
			room = t
		}
	}
	byRate := k.flow.Rate > 0 && (k.flow.Concurrency == 0 || k.admitted < k.flow.Concurrency)
	var groups []string
	more := false
	if room != 0 || byRate {
		// One more than the room, to learn whether a group is left waiting.
		limit := room
		if limit >= 0 {
			limit++
		}
		var err error
		if groups, err = f.waiting(ctx, name, limit); err != nil {
			return 0, err
		}
		if room >= 0 && len(groups) > room {
			groups, more = groups[:room], true
		}
	}
	for _, g := range groups {
		if _, err := f.b.st.FlowAdmit.ExecContext(ctx, g); err != nil {
			return 0, err
		}
	}
	if n := len(groups); n > 0 {
		k.admitted += n
		if k.flow.Rate > 0 {
			k.tokens, k.at = tokens-float64(n), f.now
		}
		k.dirty = true
	}
	var due sql.NullInt64
	if more && k.flow.Rate > 0 && (k.flow.Concurrency == 0 || k.admitted < k.flow.Concurrency) {
		// Room by concurrency is left, so the rate held the rest back: tokens-n < 1.
		due = sql.NullInt64{Int64: micros(k.flow.TokenDue(tokens-float64(len(groups)), f.now)), Valid: true}
		f.b.wakeAt(due.Int64)
	}
	if due != k.due {
		k.due, k.dirty = due, true
	}
	return len(groups), nil
}

// wakeAt makes Wait wake by due (unix microseconds). A hint from a transaction that then rolled
// back, or for a token another process took, costs one claim that finds nothing.
func (b *backend) wakeAt(due int64) {
	for {
		cur := b.due.Load()
		if cur != 0 && cur <= due {
			return
		}
		if b.due.CompareAndSwap(cur, due) {
			return
		}
	}
}

// waiting returns the oldest waiting groups of a key, up to limit (< 0: all).
func (f *flows) waiting(ctx context.Context, key string, limit int) ([]string, error) {
	rows, err := f.b.st.FlowWaiting.QueryContext(ctx, key, limit)
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			rows.Close()
			return nil, err
		}
		out = append(out, g)
	}
	return out, errors.Join(rows.Err(), rows.Close())
}

// due admits from the keys whose next rate token came due by now, and reports whether it
// admitted any group: the claim's first step. The probe is one query on the partial index of keys
// with a due time, almost always empty.
func (f *flows) due(ctx context.Context) (bool, error) {
	// TokenDue rounds up by a microsecond, so that the bucket surely holds the token then; a key
	// due within that microsecond is taken too, and admit reads its bucket as it is now.
	rows, err := f.b.st.FlowDue.QueryContext(ctx, micros(f.now)+1)
	if err != nil {
		return false, err
	}
	for rows.Next() {
		var key string
		if err := rows.Scan(&key); err != nil {
			rows.Close()
			return false, err
		}
		f.touched(key)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return false, err
	}
	if len(f.touch) == 0 {
		return false, nil
	}
	return f.settle(ctx)
}

// Forget implements transport.Limiter in one write transaction.
func (b *backend) Forget(ctx context.Context, groups []string) error {
	freed := false
	err := b.write(ctx, "forget", func(ctx context.Context) error {
		freed = false
		f := flows{b: b, now: b.now()}
		for _, g := range groups {
			if _, err := b.st.FlowForget.ExecContext(ctx, g); err != nil {
				return err
			}
			var (
				key     string
				waiting bool
			)
			err := b.st.FlowGroup.QueryRowContext(ctx, g).Scan(&key, &waiting)
			if errors.Is(err, sql.ErrNoRows) {
				continue // no such group, or an unlimited one
			}
			if err != nil {
				return err
			}
			if _, err := b.st.FlowUnlimit.ExecContext(ctx, g); err != nil {
				return err
			}
			if waiting {
				// It leaves the key's queue for the claim order, unlimited.
				f.touched(key)
				freed = true
				continue
			}
			if err := f.release(ctx, key); err != nil {
				return err
			}
		}
		admitted, err := f.settle(ctx)
		freed = freed || admitted
		return err
	})
	if err == nil && freed {
		b.sig.Notify()
	}
	return err
}

// FlowState implements transport.Limiter.
func (b *backend) FlowState(ctx context.Context, key string) (transport.FlowState, error) {
	var st transport.FlowState
	err := b.write(ctx, "flow state", func(ctx context.Context) error {
		f := flows{b: b, now: b.now()}
		k, err := f.key(ctx, key)
		if err != nil {
			return err
		}
		st = transport.FlowState{Flow: k.flow, Admitted: k.admitted}
		return b.st.FlowCountWaiting.QueryRowContext(ctx, key).Scan(&st.Waiting)
	})
	return st, err
}
