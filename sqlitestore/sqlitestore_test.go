package sqlitestore_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
	"github.com/steadhq/stead/sqlitestore"

	_ "modernc.org/sqlite"
)

// openDB opens c, a fresh file in t's temporary directory when c.Path is empty, and closes it
// when the test ends.
func openDB(t testing.TB, c sqlitedb.Config) *sqlitedb.DB {
	t.Helper()
	if c.Path == "" {
		c.Path = filepath.Join(t.TempDir(), "stead.db")
	}
	db, err := sqlitedb.Open(t.Context(), c)
	if err != nil {
		t.Fatalf("sqlitedb.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newStore returns a store on db, closed when the test ends (before db: cleanups run last in,
// first out).
func newStore(t testing.TB, db *sqlitedb.DB, opts ...sqlitestore.Option) *stead.Store {
	t.Helper()
	s, err := sqlitestore.New(t.Context(), db, opts...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// open returns a store on a fresh file in t's temporary directory, and the file's path.
func open(t *testing.T, opts ...sqlitestore.Option) (*stead.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stead.db")
	return newStore(t, openDB(t, sqlitedb.Config{Path: path}), opts...), path
}

// raw opens a plain database/sql handle on path, the way another program would.
func raw(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newExe(id string) *stead.Execution {
	return &stead.Execution{ID: id, DefinitionID: "def", Status: stead.StatusRunning, Context: json.RawMessage(`{"n":0}`)}
}

// mustCommit commits and, as a caller that goes on with the same value does, sets exe.Version to
// the version the commit stored.
func mustCommit(t *testing.T, s *stead.Store, exe *stead.Execution, b stead.Bundle) []int64 {
	t.Helper()
	c, err := s.Commit(t.Context(), exe, b)
	if err != nil {
		t.Fatalf("Commit(%s at %d): %v", exe.ID, exe.Version, err)
	}
	exe.Version = c.Version
	return c.Seqs
}

// TestNewOnABadDatabase checks that New refuses what it cannot run on with a stead sentinel.
func TestNewOnABadDatabase(t *testing.T) {
	t.Parallel()
	closed := openDB(t, sqlitedb.Config{})
	closed.Close()
	tests := []struct {
		name string
		db   *sqlitedb.DB
		want error
	}{
		{"nil", nil, stead.ErrInvalid},
		{"closed", closed, stead.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := sqlitestore.New(t.Context(), tt.db)
			if err == nil {
				s.Close()
				t.Fatal("New succeeded")
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("New: %v, want %v", err, tt.want)
			}
		})
	}
}

// TestReopen checks that data, versions and the never-reused sequence numbers survive closing the
// store and the database, and that a store on an existing file does not migrate it again.
func TestReopen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stead.db")
	db := openDB(t, sqlitedb.Config{Path: path, Synchronous: sqlitedb.SyncFull})
	s := newStore(t, db)
	ctx := t.Context()
	exe := newExe("a")
	seqs := mustCommit(t, s, exe, stead.Bundle{Emits: []stead.Emit{
		{Target: "a", Event: stead.Event{ID: "e1", Kind: "K"}},
		{Target: "a", Event: stead.Event{ID: "e2", Kind: "K"}},
	}})
	// Acknowledging the newest rows must not let their numbers be handed out again.
	if err := s.AckOutbox(ctx, seqs); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s2 := newStore(t, openDB(t, sqlitedb.Config{Path: path}))
	got, err := s2.Load(ctx, "a")
	if err != nil || got.Version != 1 {
		t.Fatalf("Load after reopen = %+v, %v", got, err)
	}
	later := mustCommit(t, s2, got, stead.Bundle{Emits: []stead.Emit{{Target: "a", Event: stead.Event{ID: "e3", Kind: "K"}}}})
	if later[0] <= slices.Max(seqs) {
		t.Fatalf("seq %d reuses or precedes acknowledged %v", later[0], seqs)
	}
	// Each migration is recorded once, whatever number of them this build has.
	var n, distinct, top int
	if err := raw(t, path).QueryRow(`SELECT COUNT(*), COUNT(DISTINCT version), MAX(version) FROM stead_migrations`).
		Scan(&n, &distinct, &top); err != nil || n == 0 || n != distinct || n != top {
		t.Fatalf("migrations recorded = %d (%d distinct, newest %d), %v; want each version once", n, distinct, top, err)
	}
}

// TestNewerSchemaRefused checks that a build never writes to a schema newer than it knows.
func TestNewerSchemaRefused(t *testing.T) {
	t.Parallel()
	_, path := open(t)
	if _, err := raw(t, path).Exec(`INSERT INTO stead_migrations (version, name) VALUES (999, 'future')`); err != nil {
		t.Fatal(err)
	}
	s2, err := sqlitestore.New(t.Context(), openDB(t, sqlitedb.Config{Path: path}))
	if err == nil {
		s2.Close()
		t.Fatal("New on a newer schema succeeded")
	}
}

// TestListingNeverReadsData breaks every stored record and lists all the same: the listing comes
// from the columns alone.
func TestListingNeverReadsData(t *testing.T) {
	t.Parallel()
	s, path := open(t)
	ctx := t.Context()
	created := time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC)
	for i := range 5 {
		e := newExe(fmt.Sprintf("e%d", i))
		e.CreatedAt = created
		e.Outcome = "o"
		if i%2 == 1 {
			e.ParentID = "e0"
		}
		mustCommit(t, s, e, stead.Bundle{})
	}
	if _, err := raw(t, path).Exec(`UPDATE stead_executions SET data = x'00ff'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "e0"); err == nil {
		t.Fatal("Load of a broken record succeeded: the test corrupts nothing")
	}
	var ids []string
	f := stead.ListFilter{DefinitionID: "def", RootsOnly: true, Statuses: []stead.Status{stead.StatusRunning}, Limit: 2}
	for {
		p, err := s.List(ctx, f)
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		for _, it := range p.Items {
			if it.Outcome != "o" || !it.CreatedAt.Equal(created) || it.Version != 1 || it.ParentID != "" {
				t.Fatalf("summary %+v does not carry the columns", it)
			}
			ids = append(ids, it.ID)
		}
		if p.NextCursor == "" {
			break
		}
		f.Cursor = p.NextCursor
	}
	if want := []string{"e0", "e2", "e4"}; !slices.Equal(ids, want) {
		t.Fatalf("listed %v, want %v", ids, want)
	}
}

// TestLoadForEventsOddIDs looks up ids holding what JSON escapes, since LoadForEvents hands its
// refs to SQLite as one JSON array: each ref must find exactly its own rows.
func TestLoadForEventsOddIDs(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ids := []string{`quote"d`, `back\slash`, `<html>&amp;`, "ünï cödé", "tab\there", "emoji 🚀", `["a","b"]`}
	var refs []stead.EventRef
	for i, id := range ids {
		mustCommit(t, s, newExe(id), stead.Bundle{ProcessedEventID: id + "/ev"})
		refs = append(refs, stead.EventRef{ExecutionID: id, EventID: id + "/ev"}, stead.EventRef{ExecutionID: id, EventID: ids[(i+1)%len(ids)] + "/ev"})
	}
	refs = append(refs, stead.EventRef{ExecutionID: `quote"d `, EventID: `quote"d/ev`})
	got, err := s.LoadForEvents(t.Context(), refs)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range refs {
		missing := i == len(refs)-1
		if missing != (got[i].Execution == nil) || (!missing && got[i].Execution.ID != r.ExecutionID) {
			t.Fatalf("ref %d (%q): execution %+v", i, r.ExecutionID, got[i].Execution)
		}
		if want := i%2 == 0 && !missing; got[i].Processed != want {
			t.Fatalf("ref %d (%q, %q): processed = %t, want %t", i, r.ExecutionID, r.EventID, got[i].Processed, want)
		}
	}
}

// TestClaimBeforeTheEpoch claims with a now before 1970, a negative number of unix microseconds:
// rows never claimed are claimable at any now, and a lease that ends before 1970 ends.
func TestClaimBeforeTheEpoch(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ctx := t.Context()
	exe := newExe("a")
	mustCommit(t, s, exe, stead.Bundle{
		Emits:  []stead.Emit{{Target: "a", Event: stead.Event{ID: "e", Kind: "K"}}},
		Spawns: []stead.Spawn{{ChildID: "c", RootPath: "p"}},
	})
	now := time.Date(1901, 2, 3, 4, 5, 6, 0, time.UTC)
	for _, later := range []time.Duration{0, time.Second} {
		es, err := s.ClaimOutbox(ctx, now.Add(later), time.Second, 10)
		if err != nil || len(es) != 1 {
			t.Fatalf("ClaimOutbox at %v = %v, %v; want the entry", now.Add(later), es, err)
		}
		ss, err := s.ClaimSpawns(ctx, now.Add(later), time.Second, 10)
		if err != nil || len(ss) != 1 {
			t.Fatalf("ClaimSpawns at %v = %v, %v; want the intent", now.Add(later), ss, err)
		}
	}
	if es, err := s.ClaimOutbox(ctx, now.Add(1500*time.Millisecond), time.Second, 10); err != nil || len(es) != 0 {
		t.Fatalf("ClaimOutbox under a live lease = %v, %v; want nothing", es, err)
	}
}

// TestBusyBecomesUnavailable holds the write lock from another connection, as another process
// would, and checks that a write waits for the busy timeout, fails with ErrUnavailable having
// written nothing, that reads go on meanwhile, and that the write succeeds once the lock is gone.
func TestBusyBecomesUnavailable(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stead.db")
	s := newStore(t, openDB(t, sqlitedb.Config{Path: path, BusyTimeout: 150 * time.Millisecond}))
	ctx := t.Context()
	exe := newExe("a")
	mustCommit(t, s, exe, stead.Bundle{})

	other := raw(t, path)
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}

	writes := []struct {
		name string
		call func() error
	}{
		{"Commit", func() error { _, err := s.Commit(ctx, exe, stead.Bundle{ProcessedEventID: "ev"}); return err }},
		{"CommitBatch", func() error {
			_, err := s.CommitBatch(ctx, []stead.CommitItem{{Execution: exe}})
			return err
		}},
		{"ClaimOutbox", func() error { _, err := s.ClaimOutbox(ctx, time.Now(), time.Second, 10); return err }},
		{"Purge", func() error { _, err := s.Purge(ctx, "a", 1); return err }},
	}
	for _, w := range writes {
		start := time.Now()
		err := w.call()
		if !errors.Is(err, stead.ErrUnavailable) {
			t.Fatalf("%s under a foreign write lock: %v, want ErrUnavailable", w.name, err)
		}
		if waited := time.Since(start); waited < 100*time.Millisecond {
			t.Fatalf("%s gave up after %v, before the busy timeout", w.name, waited)
		}
	}
	// WAL: readers are not blocked by the writer.
	got, processed, err := s.LoadForEvent(ctx, "a", "ev")
	if err != nil || got.Version != 1 || processed {
		t.Fatalf("LoadForEvent during a foreign write = %v, %v, %v", got, processed, err)
	}
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	mustCommit(t, s, exe, stead.Bundle{ProcessedEventID: "ev"})
	if exe.Version != 2 {
		t.Fatalf("version after the lock went = %d, want 2", exe.Version)
	}
}

// TestContext checks that a cancelled context stops a call before it writes, and that a deadline
// passing while the write lock is held elsewhere reports ErrUnavailable with the deadline in the
// chain.
func TestContext(t *testing.T) {
	t.Parallel()
	s, path := open(t)
	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Commit(cancelled, newExe("a"), stead.Bundle{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit with a cancelled context: %v", err)
	}
	if _, err := s.Load(cancelled, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Load with a cancelled context: %v", err)
	}
	if _, err := s.Load(t.Context(), "a"); !errors.Is(err, stead.ErrNotFound) {
		t.Fatalf("a cancelled commit wrote: Load = %v", err)
	}

	conn, err := raw(t, path).Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(t.Context(), `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(context.Background(), `ROLLBACK`)
	ctx, stop := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer stop()
	start := time.Now()
	_, err = s.Commit(ctx, newExe("b"), stead.Bundle{})
	if !errors.Is(err, stead.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Commit past its deadline: %v, want ErrUnavailable and DeadlineExceeded", err)
	}
	if waited := time.Since(start); waited > 2*time.Second {
		t.Fatalf("Commit waited %v, past its 50ms deadline", waited)
	}
}

// TestCloseLeavesTheDatabaseOpen closes a store and checks that its calls fail with ErrClosed
// while the database it ran on, which is the application's, goes on serving another store.
func TestCloseLeavesTheDatabaseOpen(t *testing.T) {
	t.Parallel()
	db := openDB(t, sqlitedb.Config{})
	s := newStore(t, db)
	ctx := t.Context()
	exe := newExe("a")
	mustCommit(t, s, exe, stead.Bundle{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load(ctx, "a"); !errors.Is(err, stead.ErrClosed) {
		t.Fatalf("Load after Close: %v, want ErrClosed", err)
	}
	if err := db.W.PingContext(ctx); err != nil {
		t.Fatalf("the database after the store closed: %v", err)
	}
	s2 := newStore(t, db)
	mustCommit(t, s2, exe, stead.Bundle{})
	if got, err := s2.Load(ctx, "a"); err != nil || got.Version != 2 {
		t.Fatalf("Load on a second store of the database = %+v, %v", got, err)
	}
}

// TestMemory runs a whole cycle on an in-memory database: two stores on one sqlitedb.DB, as two
// components of an application share it, with concurrent readers and writers. The database is
// one for every connection of the DB, so the stores see each other's commits.
func TestMemory(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db := openDB(t, sqlitedb.Config{Path: sqlitedb.Memory})
	stores := []*stead.Store{newStore(t, db), newStore(t, db)}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		s := stores[g%2]
		wg.Go(func() {
			exe := newExe(fmt.Sprintf("m%d", g))
			for i := range 20 {
				c, err := s.Commit(ctx, exe, stead.Bundle{ProcessedEventID: fmt.Sprintf("ev%d", i),
					Emits: []stead.Emit{{Target: exe.ID, Event: stead.Event{ID: fmt.Sprint(i), Kind: "K"}}}})
				if err != nil {
					errs <- err
					return
				}
				exe.Version = c.Version
				if _, err := s.LoadForEvents(ctx, []stead.EventRef{{ExecutionID: exe.ID, EventID: "ev0"}, {ExecutionID: "none", EventID: "x"}}); err != nil {
					errs <- err
					return
				}
				if _, err := s.List(ctx, stead.ListFilter{Limit: 3}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, s := range stores {
		got, err := s.PendingOutbox(ctx, "", 1000)
		if err != nil || len(got) != 80 {
			t.Fatalf("store %d: PendingOutbox = %d entries, %v; want 80", i, len(got), err)
		}
		res, err := s.LoadForEvents(ctx, []stead.EventRef{{ExecutionID: "m1", EventID: "ev19"}, {ExecutionID: "none", EventID: "x"}})
		if err != nil || res[0].Execution == nil || res[0].Execution.Version != 20 || !res[0].Processed || res[1].Execution != nil {
			t.Fatalf("store %d: LoadForEvents = %+v, %v", i, res, err)
		}
	}
}

// twoStores returns two stores on one file: on two databases, as two processes have them (two
// write gates, meeting in SQLite's lock), or on one, as two components of one process have them
// (one gate).
func twoStores(t *testing.T, shared bool) (a, b *stead.Store) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "stead.db")
	db := openDB(t, sqlitedb.Config{Path: path})
	other := db
	if !shared {
		other = openDB(t, sqlitedb.Config{Path: path})
	}
	return newStore(t, db), newStore(t, other)
}

var sharing = []struct {
	name   string
	shared bool
}{{"two_databases", false}, {"one_database", true}}

// TestTwoStoresOneFile races two stores over the same executions: every version is won exactly
// once.
func TestTwoStoresOneFile(t *testing.T) {
	t.Parallel()
	for _, sh := range sharing {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			a, b := twoStores(t, sh.shared)
			raceCommits(t, a, b)
		})
	}
}

func raceCommits(t *testing.T, a, b *stead.Store) {
	ids := []string{"x", "y"}
	for _, id := range ids {
		mustCommit(t, a, newExe(id), stead.Bundle{})
	}
	type win struct {
		id string
		v  int64
	}
	var (
		mu   sync.Mutex
		wins []win
		wg   sync.WaitGroup
	)
	for w, s := range []*stead.Store{a, b, a, b} {
		wg.Go(func() {
			for i := range 60 {
				id := ids[i%len(ids)]
				exe, err := s.Load(t.Context(), id)
				if err != nil {
					t.Error(err)
					return
				}
				exe.Context = json.RawMessage(fmt.Sprintf(`{"writer":%d,"i":%d}`, w, i))
				c, err := s.Commit(t.Context(), exe, stead.Bundle{ProcessedEventID: fmt.Sprintf("w%d-%d", w, i)})
				switch {
				case err == nil:
					mu.Lock()
					wins = append(wins, win{id, c.Version})
					mu.Unlock()
				case !errors.Is(err, stead.ErrConflict):
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	checkWins(t, a, ids, func(yield func(string, int64) bool) {
		for _, w := range wins {
			if !yield(w.id, w.v) {
				return
			}
		}
	})
}

// checkWins checks that the versions won for each id are exactly 2..final, each once.
func checkWins(t *testing.T, s *stead.Store, ids []string, wins func(func(string, int64) bool)) {
	t.Helper()
	byID := map[string][]int64{}
	for id, v := range wins {
		byID[id] = append(byID[id], v)
	}
	total := 0
	for _, id := range ids {
		exe, err := s.Load(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		vs := byID[id]
		slices.Sort(vs)
		for i, v := range vs {
			if v != int64(i)+2 {
				t.Fatalf("%s: versions won %v: not each of 2..%d exactly once", id, vs, exe.Version)
			}
		}
		if int64(len(vs))+1 != exe.Version {
			t.Fatalf("%s: %d wins but version %d", id, len(vs), exe.Version)
		}
		total += len(vs)
	}
	if total == 0 {
		t.Fatal("no writer won anything")
	}
}

// TestIndexedColumnsFollowCommits checks that status and definition changes reach the listing
// columns, which the compare-and-swap writes apart from the rest of the row.
func TestIndexedColumnsFollowCommits(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ctx := t.Context()
	exe := newExe("a")
	steps := []struct {
		def    string
		status stead.Status
	}{
		{"def", stead.StatusRunning}, {"def", stead.StatusRunning}, {"def", stead.StatusSuspended},
		{"def2", stead.StatusSuspended}, {"def3", stead.StatusDone},
	}
	for _, st := range steps {
		exe.DefinitionID, exe.Status = st.def, st.status
		mustCommit(t, s, exe, stead.Bundle{})
		p, err := s.List(ctx, stead.ListFilter{DefinitionID: st.def, Statuses: []stead.Status{st.status}})
		if err != nil || len(p.Items) != 1 || p.Items[0].Version != exe.Version {
			t.Fatalf("after commit %d (%s, %s): List = %+v, %v", exe.Version, st.def, st.status, p.Items, err)
		}
		p, err = s.List(ctx, stead.ListFilter{Statuses: []stead.Status{stead.StatusPending}})
		if err != nil || len(p.Items) != 0 {
			t.Fatalf("List(pending) = %+v, %v", p.Items, err)
		}
	}
}

// TestCloseWhileBusy closes the store under concurrent writers and readers: every call either
// succeeds or fails with ErrClosed, never with a raw driver error.
func TestCloseWhileBusy(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	ctx := t.Context()
	var wg sync.WaitGroup
	errc := make(chan error, 64)
	for g := range 4 {
		wg.Go(func() {
			exe := newExe(fmt.Sprintf("c%d", g))
			for i := 0; ; i++ {
				var err error
				switch i % 4 {
				case 0:
					var c stead.Committed
					if c, err = s.Commit(ctx, exe, stead.Bundle{ProcessedEventID: fmt.Sprint(i)}); err == nil {
						exe.Version = c.Version
					}
				case 1:
					_, _, err = s.LoadForEvent(ctx, exe.ID, "0")
					if errors.Is(err, stead.ErrNotFound) {
						err = nil
					}
				case 2:
					_, err = s.List(ctx, stead.ListFilter{Statuses: []stead.Status{stead.StatusRunning}})
				case 3:
					_, err = s.ClaimOutbox(ctx, time.Now(), time.Second, 10)
				}
				if err != nil {
					if !errors.Is(err, stead.ErrClosed) {
						errc <- err
					}
					return
				}
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Errorf("call racing Close: %v, want ErrClosed", err)
	}
}

// TestDeadlinesMidTransaction lets deadlines expire at arbitrary points of commits: every error
// names the deadline, the caller's version stays right (reloaded after an ErrTimeout, whose
// outcome is unknown), and the writer is never left inside a transaction.
func TestDeadlinesMidTransaction(t *testing.T) {
	t.Parallel()
	s, _ := open(t)
	exe := newExe("d")
	mustCommit(t, s, exe, stead.Bundle{})
	for i := range 200 {
		ctx, cancel := context.WithTimeout(t.Context(), time.Duration(i%40)*10*time.Microsecond)
		c, err := s.Commit(ctx, exe, stead.Bundle{
			ProcessedEventID: fmt.Sprint(i),
			Emits:            []stead.Emit{{Target: "d", Event: stead.Event{ID: fmt.Sprint(i), Kind: "K"}}},
			Trace:            &stead.TraceStep{EventKind: "K"},
		})
		cancel()
		switch {
		case err == nil:
			exe.Version = c.Version
		case !errors.Is(err, context.DeadlineExceeded):
			t.Fatalf("commit %d: %v, want the deadline in the chain", i, err)
		case errors.Is(err, stead.ErrTimeout):
			if exe, err = s.Load(t.Context(), "d"); err != nil {
				t.Fatal(err)
			}
		case errors.Is(err, stead.ErrConflict), errors.Is(err, stead.ErrInvalid), errors.Is(err, stead.ErrClosed):
			t.Fatalf("commit %d: %v, want ErrUnavailable or a bare deadline (nothing written) or ErrTimeout", i, err)
		}
	}
	mustCommit(t, s, exe, stead.Bundle{ProcessedEventID: "last"})
	got, processed, err := s.LoadForEvent(t.Context(), "d", "last")
	if err != nil || !processed || got.Version != exe.Version {
		t.Fatalf("after the deadlines: %v, %v, %v (want version %d)", got, processed, err, exe.Version)
	}
	// Every committed version left exactly one outbox entry and one marker: no half commits.
	entries, err := s.PendingOutbox(t.Context(), "d", stead.MaxListLimit)
	if err != nil || int64(len(entries)) != exe.Version-2 {
		t.Fatalf("%d outbox entries for %d step commits, %v", len(entries), exe.Version-2, err)
	}
}

// TestClaimsExclusiveAcrossStores has relays on two stores of one file claim the same outbox and
// spawns: no row is handed out twice while its lease holds, and every row is handed out.
func TestClaimsExclusiveAcrossStores(t *testing.T) {
	t.Parallel()
	for _, sh := range sharing {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			a, b := twoStores(t, sh.shared)
			raceClaims(t, a, b)
		})
	}
}

func raceClaims(t *testing.T, a, b *stead.Store) {
	const n = 300
	exe := newExe("src")
	for i := 0; i < n; i += 10 {
		var bd stead.Bundle
		for j := range 10 {
			bd.Emits = append(bd.Emits, stead.Emit{Target: "t", Event: stead.Event{ID: fmt.Sprint(i + j), Kind: "K"}})
			bd.Spawns = append(bd.Spawns, stead.Spawn{ChildID: fmt.Sprintf("c%d", i+j)})
		}
		mustCommit(t, a, exe, bd)
	}
	now := time.Now()
	var (
		mu              sync.Mutex
		outbox, spawned = map[int64]int{}, map[int64]int{}
		wg              sync.WaitGroup
	)
	for w, s := range []*stead.Store{a, b, a, b} {
		wg.Go(func() {
			for {
				es, err := s.ClaimOutbox(t.Context(), now, time.Hour, 7)
				if err != nil {
					t.Error(err)
					return
				}
				ss, err := s.ClaimSpawns(t.Context(), now, time.Hour, 5+w)
				if err != nil {
					t.Error(err)
					return
				}
				if len(es) == 0 && len(ss) == 0 {
					return
				}
				mu.Lock()
				for _, e := range es {
					outbox[e.Seq]++
				}
				for _, e := range ss {
					spawned[e.Seq]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for what, m := range map[string]map[int64]int{"outbox": outbox, "spawns": spawned} {
		if len(m) != n {
			t.Errorf("%s: %d distinct rows claimed, want %d", what, len(m), n)
		}
		for seq, c := range m {
			if c != 1 {
				t.Errorf("%s: row %d claimed %d times under a live lease", what, seq, c)
			}
		}
	}
	// Once the leases end, everything is claimable again, from either store.
	again, err := b.ClaimOutbox(t.Context(), now.Add(time.Hour), time.Minute, stead.MaxListLimit)
	if err != nil || len(again) != n {
		t.Fatalf("after the leases: %d claimed, %v; want %d", len(again), err, n)
	}
}

// TestNewConcurrently opens one new file from several databases at once, as processes starting
// together do: the WAL switch and the migrations serialise, and every store works.
func TestNewConcurrently(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "stead.db")
	stores := make([]*stead.Store, 4)
	errs := make([]error, len(stores))
	var wg sync.WaitGroup
	for i := range stores {
		wg.Go(func() {
			db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: path})
			if err != nil {
				errs[i] = err
				return
			}
			t.Cleanup(func() { db.Close() })
			stores[i], errs[i] = sqlitestore.New(t.Context(), db)
		})
	}
	wg.Wait()
	for i, s := range stores {
		if errs[i] != nil {
			t.Fatalf("store %d: %v", i, errs[i])
		}
		t.Cleanup(func() { s.Close() })
		mustCommit(t, s, newExe(fmt.Sprintf("o%d", i)), stead.Bundle{})
	}
	p, err := stores[0].List(t.Context(), stead.ListFilter{})
	if err != nil || len(p.Items) != len(stores) {
		t.Fatalf("List = %d items, %v", len(p.Items), err)
	}
}

// TestDamagedFile puts a store on a file that is not a database: whichever of sqlitedb.Open and
// New notices first, the error is ErrUnavailable, never a raw driver error.
func TestDamagedFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "garbage.db")
	if err := os.WriteFile(path, bytes.Repeat([]byte("not a database "), 512), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sqlitedb.Open(t.Context(), sqlitedb.Config{Path: path})
	if err == nil {
		defer db.Close()
		var s *stead.Store
		if s, err = sqlitestore.New(t.Context(), db); err == nil {
			s.Close()
			t.Fatal("New on a file that is not a database succeeded")
		}
	}
	if !errors.Is(err, stead.ErrUnavailable) {
		t.Fatalf("got %v, want ErrUnavailable", err)
	}
}
