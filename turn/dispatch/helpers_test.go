package dispatch_test

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/turn"
	"github.com/steadhq/stead/turn/memturn"
	"github.com/steadhq/stead/turn/pgturn"
	"github.com/steadhq/stead/turn/sqliteturn"
)

var epoch = time.Unix(1_000_000, 0).UTC()

// backend opens one database of a kind and returns a way to open stores on it: each call to open
// is a separate handle (a pool, a DB with its own write gate), as a separate process would have.
type backend struct {
	name  string
	setup func(t *testing.T) (open func(t *testing.T) turn.Stores)
}

var backends = []backend{
	{"memory", func(t *testing.T) func(*testing.T) turn.Stores {
		s := memturn.New() // one process: every "handle" is the same store
		return func(*testing.T) turn.Stores { return s }
	}},
	{"sqlite", func(t *testing.T) func(*testing.T) turn.Stores {
		path := filepath.Join(t.TempDir(), "turns.db")
		return func(t *testing.T) turn.Stores {
			db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: path})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			s, err := sqliteturn.New(t.Context(), db)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}},
	{"postgres", func(t *testing.T) func(*testing.T) turn.Stores {
		schema := pgdbtest.Schema(t)
		return func(t *testing.T) turn.Stores {
			s, err := pgturn.New(t.Context(), pgdbtest.Pool(t), pgturn.WithSchema(schema))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}},
}

// forEachBackend runs test on a fresh database of every kind, in parallel.
func forEachBackend(t *testing.T, test func(t *testing.T, open func(*testing.T) turn.Stores)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			test(t, b.setup(t))
		})
	}
}

// clock is a manual clock, safe for concurrent use.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: epoch} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// enqueue puts a row for destination in the outbox and returns its id.
func enqueue(t *testing.T, s turn.Stores, destination string, created time.Time) turn.ID {
	t.Helper()
	id := turn.NewID()
	e := turn.OutboxEntry{OutboxID: id, CommandID: turn.NewID(), Destination: destination,
		Payload: json.RawMessage(`{"to":"ada@example.com"}`), IdempotencyKey: id.String(),
		Status: turn.OutboxPending, CreatedAt: created}
	if err := s.Outbox.Enqueue(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	return id
}

func load(t *testing.T, s turn.Stores, id turn.ID) turn.OutboxRecord {
	t.Helper()
	rec, err := s.Outbox.LoadOutbox(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// sends counts the sends of each row, safe for concurrent use.
type sends struct {
	mu sync.Mutex
	n  map[turn.ID]int
}

func (s *sends) add(id turn.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.n == nil {
		s.n = map[turn.ID]int{}
	}
	s.n[id]++
	return s.n[id]
}

func (s *sends) count(id turn.ID) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[id]
}

func (s *sends) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return fmt.Sprint(s.n)
}
