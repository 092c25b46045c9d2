package memturn

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/steadhq/stead/turn"
)

// Backend is the in-memory turn backend: all seven roles behind one mutex. It is the reference:
// small enough to read, deterministic (ordered lists, a clock you choose), and able to fail on
// demand (FailNext) so that atomicity can be tested rather than assumed. It assumes the checked
// front of turn.NewStores before it: New returns that front, and Stores.Backend reaches this
// type for its test affordances.
//
// Records go in and come out as copies, so a caller cannot reach into the backend's state.
type Backend struct {
	clock  func() time.Time
	faults faults

	mu     sync.Mutex
	shards map[string]*shard // per account
	seq    int64             // last event sequence handed out, across every account
	outbox map[turn.ID]turn.OutboxRecord
	keys   map[outboxKey]turn.ID
	// live indexes the rows a sweep looks at (pending and dispatching) by status, so that a
	// claim or a reaping costs what is live, not what the outbox ever held.
	live map[turn.OutboxStatus]map[turn.ID]struct{}
	// byCommand lists each command's outbox rows in enqueue order.
	byCommand map[turn.ID][]turn.ID
}

type outboxKey struct{ destination, key string }

// shard is everything one account owns.
type shard struct {
	conversations map[turn.ID]turn.Conversation
	turns         map[turn.ID]turnRow
	interactions  map[turn.ID]turn.InteractionRecord
	byCase        map[turn.CaseKey][]turn.ID // interaction ids per case, in insert order
	journal       map[turn.ID]turn.JournalEntry
	journalKeys   map[string]turn.ID
	stream        []turn.Event // the account's events in sequence order
	eventIndex    map[turn.ID]int
	replay        map[turn.ID]turn.ReplayRecord
}

type turnRow struct {
	user      turn.UserTurn
	assistant *turn.AssistantTurn
	marker    turn.PhaseMarker
}

var _ turn.Backend = (*Backend)(nil)

// Option configures New.
type Option func(*Backend)

// WithClock makes the backend stamp the times it owns (phase updates, resolutions, completions,
// invalidations, redactions, receipts) from now instead of time.Now, in UTC truncated to
// microseconds as PostgreSQL keeps them. A ManualClock's Now makes a run deterministic.
func WithClock(now func() time.Time) Option {
	return func(b *Backend) {
		if now != nil {
			b.clock = now
		}
	}
}

// New returns the checked Stores of an empty in-memory backend. Its test affordances (FailNext,
// ArmedFailures, ClearFailures) are on the backend: stores.Backend().(*memturn.Backend).
func New(opts ...Option) turn.Stores {
	b := &Backend{
		clock:     time.Now,
		shards:    map[string]*shard{},
		outbox:    map[turn.ID]turn.OutboxRecord{},
		keys:      map[outboxKey]turn.ID{},
		byCommand: map[turn.ID][]turn.ID{},
		live: map[turn.OutboxStatus]map[turn.ID]struct{}{
			turn.OutboxPending:     {},
			turn.OutboxDispatching: {},
		},
	}
	for _, o := range opts {
		o(b)
	}
	return turn.NewStores(b)
}

func (s *Backend) now() time.Time { return turn.ClockTime(s.clock()) }

// shardOf returns the account's shard. An account that has stored nothing gets an empty shard,
// on which every lookup simply finds nothing; a write goes to a shard found by a lookup or made
// by ensureShard.
func (s *Backend) shardOf(account string) *shard {
	if sh := s.shards[account]; sh != nil {
		return sh
	}
	return &shard{}
}

// ensureShard returns the account's shard, creating it (undoably) if the account has none.
func (s *Backend) ensureShard(u *undo, account string) *shard {
	if sh := s.shards[account]; sh != nil {
		return sh
	}
	sh := &shard{
		conversations: map[turn.ID]turn.Conversation{},
		turns:         map[turn.ID]turnRow{},
		interactions:  map[turn.ID]turn.InteractionRecord{},
		byCase:        map[turn.CaseKey][]turn.ID{},
		journal:       map[turn.ID]turn.JournalEntry{},
		journalKeys:   map[string]turn.ID{},
		eventIndex:    map[turn.ID]int{},
		replay:        map[turn.ID]turn.ReplayRecord{},
	}
	s.shards[account] = sh
	u.add(func() { delete(s.shards, account) })
	return sh
}

// lockShard opens a call scoped to one account: it takes the lock and returns the account's
// shard (shardOf). Unless it returns an error, the caller holds s.mu and must unlock it.
func (s *Backend) lockShard(ctx context.Context, account string) (*shard, error) {
	if err := s.lock(ctx); err != nil {
		return nil, err
	}
	return s.shardOf(account), nil
}

// put sets m[k] = v and records how to restore the previous entry (or its absence).
func put[K comparable, V any](u *undo, m map[K]V, k K, v V) {
	old, had := m[k]
	m[k] = v
	u.add(func() {
		if had {
			m[k] = old
		} else {
			delete(m, k)
		}
	})
}

// del deletes m[k] and records how to restore it.
func del[K comparable, V any](u *undo, m map[K]V, k K) {
	old, had := m[k]
	if !had {
		return
	}
	delete(m, k)
	u.add(func() { m[k] = old })
}

// lock takes the store's mutex after checking ctx: a call whose context is already done does
// nothing.
func (s *Backend) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	return nil
}

// Copies. Every slice and document is copied on the way in and on the way out; stored values are
// never modified in place (a change stores a new value), so a shallow copy of a stored struct is
// a safe snapshot for undo.

func doc(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage("null") // what a jsonb NOT NULL column returns for "no document"
	}
	return bytes.Clone(raw)
}

func optDoc(raw json.RawMessage) json.RawMessage { return bytes.Clone(raw) }

func copyConversation(c turn.Conversation) turn.Conversation {
	c.Metadata = doc(c.Metadata)
	return c
}

func copyUserTurn(u turn.UserTurn) turn.UserTurn {
	u.Input.InteractionResponse = doc(u.Input.InteractionResponse)
	u.Input.Attachments = doc(u.Input.Attachments)
	u.Input.Origin = doc(u.Input.Origin)
	return u
}

func copyAssistantTurn(a *turn.AssistantTurn) *turn.AssistantTurn {
	if a == nil {
		return nil
	}
	out := *a
	out.Blocks = slices.Clone(a.Blocks)
	for i := range out.Blocks {
		out.Blocks[i].Body = doc(out.Blocks[i].Body)
	}
	out.Subjects = doc(a.Subjects)
	out.Expectations = doc(a.Expectations)
	return &out
}

func copyInteraction(i turn.Interaction) turn.Interaction {
	i.Payload.Options = slices.Clone(i.Payload.Options)
	i.Payload.ReviewEntries = doc(i.Payload.ReviewEntries)
	i.Payload.Metadata = doc(i.Payload.Metadata)
	return i
}

func copyRecord(r turn.InteractionRecord) turn.InteractionRecord {
	r.Interaction = copyInteraction(r.Interaction)
	r.ResolutionEventIDs = slices.Clone(r.ResolutionEventIDs)
	if r.Invalidation != nil {
		inv := *r.Invalidation
		if inv.NewRevision != nil {
			rev := *inv.NewRevision
			inv.NewRevision = &rev
		}
		r.Invalidation = &inv
	}
	return r
}

func copyOutcome(o *turn.JournalOutcome) *turn.JournalOutcome {
	if o == nil {
		return nil
	}
	out := *o
	out.EventIDs = slices.Clone(o.EventIDs)
	out.Rejection = optDoc(o.Rejection)
	return &out
}

func copyEntry(e turn.JournalEntry) turn.JournalEntry {
	e.CommandPayload = doc(e.CommandPayload)
	e.Origin = doc(e.Origin)
	e.Result = copyOutcome(e.Result)
	return e
}

func copyEvent(e turn.Event) turn.Event {
	e.Payload = doc(e.Payload)
	if e.Redaction != nil {
		r := *e.Redaction
		e.Redaction = &r
	}
	return e
}

func copyOutboxEntry(e turn.OutboxEntry) turn.OutboxEntry {
	e.Payload = doc(e.Payload)
	return e
}

func copyOutboxRecord(r turn.OutboxRecord) turn.OutboxRecord {
	r.Entry = copyOutboxEntry(r.Entry)
	if r.Claim != nil {
		c := *r.Claim
		r.Claim = &c
	}
	return r
}

func copyReplay(r turn.ReplayRecord) turn.ReplayRecord {
	r.EventIDs = slices.Clone(r.EventIDs)
	r.Details = doc(r.Details)
	return r
}

// byTimeThenID orders by a time, then by id bytes (uuid order in PostgreSQL).
func byTimeThenID(ta time.Time, a turn.ID, tb time.Time, b turn.ID) int {
	if c := ta.Compare(tb); c != 0 {
		return c
	}
	return a.Compare(b)
}

func lastN[T any](xs []T, n int) []T {
	if n < len(xs) {
		return xs[len(xs)-n:]
	}
	return xs
}

func firstN[T any](xs []T, n int) []T {
	if n < len(xs) {
		return xs[:n]
	}
	return xs
}

func sortIDs(ids []turn.ID) { slices.SortFunc(ids, turn.ID.Compare) }
