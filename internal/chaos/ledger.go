package chaos

import (
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	_ "modernc.org/sqlite" // the ledger is a SQLite file every worker process writes
)

// Ledger is the drill's external system: a SQLite file, outside the database under test, where
// every action of every worker process records its side effect under the action's idempotency
// key. A key that runs again (a step replayed after a crash or a lost commit) bumps its runs
// instead of adding a row, as an idempotent external system would; two keys for one event are a
// double application that no key could hide.
type Ledger struct{ db *sql.DB }

// Effect kinds.
const (
	KindWork  = "work"  // a work event applied
	KindArmed = "armed" // a timer armed (the entry of the waiting state)
	KindFired = "fired" // a timer fired (its timeout applied)
)

// OpenLedger opens (creating) the ledger at path.
func OpenLedger(path string) (*Ledger, error) {
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(20000)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, err
	}
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS effects (
		key TEXT PRIMARY KEY, kind TEXT NOT NULL, execution TEXT NOT NULL, event TEXT NOT NULL,
		worker TEXT NOT NULL, runs INTEGER NOT NULL DEFAULT 1,
		at INTEGER NOT NULL,      -- when the first run recorded it (Unix ns)
		fire_at INTEGER NOT NULL  -- a fired timer's due time (Unix ns), else 0
	)`); err != nil {
		db.Close()
		return nil, fmt.Errorf("chaos: ledger: %w", err)
	}
	return &Ledger{db: db}, nil
}

// Close closes the ledger.
func (l *Ledger) Close() error { return l.db.Close() }

// Record records one effect under key.
func (l *Ledger) Record(key, kind, execution, event, worker string, fireAt time.Time) error {
	var due int64
	if !fireAt.IsZero() {
		due = fireAt.UnixNano()
	}
	_, err := l.db.Exec(`INSERT INTO effects (key, kind, execution, event, worker, at, fire_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET runs = runs + 1`,
		key, kind, execution, event, worker, time.Now().UnixNano(), due)
	return err
}

// Count returns how many effects of kind are recorded.
func (l *Ledger) Count(kind string) (int, error) {
	var n int
	err := l.db.QueryRow(`SELECT count(*) FROM effects WHERE kind = ?`, kind).Scan(&n)
	return n, err
}

// Tally is what the ledger says about a run.
type Tally struct {
	Work       map[string]int // distinct work events applied, by execution
	Doubled    int            // (execution, event) pairs applied under two keys or more
	Replayed   int            // keys that ran more than once (absorbed by the key)
	Armed      map[string]int // timers armed, by execution
	Fired      map[string]int // timers fired, by execution
	Early      int            // timers that fired before their due time
	EarliestBy time.Duration  // the most a timer fired early by (0 when none did)
}

// Tally reads the ledger.
func (l *Ledger) Tally() (Tally, error) {
	t := Tally{Work: map[string]int{}, Armed: map[string]int{}, Fired: map[string]int{}}
	rows, err := l.db.Query(`SELECT kind, execution, count(DISTINCT event) FROM effects GROUP BY kind, execution`)
	if err != nil {
		return t, err
	}
	for rows.Next() {
		var kind, exe string
		var n int
		if err := rows.Scan(&kind, &exe, &n); err != nil {
			rows.Close()
			return t, err
		}
		switch kind {
		case KindWork:
			t.Work[exe] = n
		case KindFired:
			t.Fired[exe] = n
		}
	}
	rows.Close()
	// Armed timers are counted by key: each entry of the waiting state is a step of its own.
	rows, err = l.db.Query(`SELECT execution, count(*) FROM effects WHERE kind = ? GROUP BY execution`, KindArmed)
	if err != nil {
		return t, err
	}
	for rows.Next() {
		var exe string
		var n int
		if err := rows.Scan(&exe, &n); err != nil {
			rows.Close()
			return t, err
		}
		t.Armed[exe] = n
	}
	rows.Close()
	if err := l.db.QueryRow(`SELECT count(*) FROM (SELECT 1 FROM effects WHERE kind IN (?, ?)
		GROUP BY kind, execution, event HAVING count(*) > 1)`, KindWork, KindFired).Scan(&t.Doubled); err != nil {
		return t, err
	}
	if err := l.db.QueryRow(`SELECT count(*) FROM effects WHERE runs > 1`).Scan(&t.Replayed); err != nil {
		return t, err
	}
	var early sql.NullInt64
	if err := l.db.QueryRow(`SELECT count(*), max(fire_at - at) FROM effects WHERE kind = ? AND at < fire_at`,
		KindFired).Scan(&t.Early, &early); err != nil {
		return t, err
	}
	t.EarliestBy = time.Duration(early.Int64)
	return t, nil
}

// FirstAfter returns when the first effect recorded after since was recorded, and whether there
// is one.
func (l *Ledger) FirstAfter(since time.Time) (time.Time, bool, error) {
	var at sql.NullInt64
	err := l.db.QueryRow(`SELECT min(at) FROM effects WHERE at > ?`, since.UnixNano()).Scan(&at)
	if err != nil || !at.Valid {
		return time.Time{}, false, err
	}
	return time.Unix(0, at.Int64), true, nil
}

// Ledgers are the ledgers of every worker process of a drill, one file each (ledger-*.db in a
// directory): a process stopped with SIGSTOP in the middle of a write holds its file's write
// lock, and one shared file would stall every other worker with it — the drill's artifact, not
// the system's. The drill reads them together.
type Ledgers struct {
	dir  string
	open map[string]*Ledger
}

// NewLedgers returns the ledgers under dir.
func NewLedgers(dir string) *Ledgers { return &Ledgers{dir: dir, open: map[string]*Ledger{}} }

// Path returns the ledger file of the worker named name.
func (ls *Ledgers) Path(name string) string { return filepath.Join(ls.dir, "ledger-"+name+".db") }

// all opens every ledger file there is so far.
func (ls *Ledgers) all() ([]*Ledger, error) {
	paths, err := filepath.Glob(filepath.Join(ls.dir, "ledger-*.db"))
	if err != nil {
		return nil, err
	}
	out := make([]*Ledger, 0, len(paths))
	for _, p := range paths {
		l, ok := ls.open[p]
		if !ok {
			if l, err = OpenLedger(p); err != nil {
				return nil, err
			}
			ls.open[p] = l
		}
		out = append(out, l)
	}
	return out, nil
}

// Close closes every ledger opened.
func (ls *Ledgers) Close() error {
	var errs []error
	for _, l := range ls.open {
		errs = append(errs, l.Close())
	}
	ls.open = map[string]*Ledger{}
	return errors.Join(errs...)
}

// Count returns how many effects of kind the ledgers hold.
func (ls *Ledgers) Count(kind string) (int, error) {
	all, err := ls.all()
	if err != nil {
		return 0, err
	}
	total := 0
	for _, l := range all {
		n, err := l.Count(kind)
		if err != nil {
			return 0, err
		}
		total += n
	}
	return total, nil
}

// FirstAfter is Ledger.FirstAfter over every ledger.
func (ls *Ledgers) FirstAfter(since time.Time) (time.Time, bool, error) {
	all, err := ls.all()
	if err != nil {
		return time.Time{}, false, err
	}
	var first time.Time
	found := false
	for _, l := range all {
		at, ok, err := l.FirstAfter(since)
		if err != nil {
			return time.Time{}, false, err
		}
		if ok && (!found || at.Before(first)) {
			first, found = at, true
		}
	}
	return first, found, nil
}

// AppliedBy is Ledger.AppliedBy over every ledger: an event counts once, at the first time any
// worker applied it.
func (ls *Ledgers) AppliedBy(prefix string) (time.Time, int, error) {
	all, err := ls.all()
	if err != nil {
		return time.Time{}, 0, err
	}
	first := map[string]int64{}
	for _, l := range all {
		rows, err := l.db.Query(`SELECT execution || ' ' || event, min(at) FROM effects
			WHERE kind = ? AND substr(event, 1, ?) = ? GROUP BY execution, event`, KindWork, len(prefix), prefix)
		if err != nil {
			return time.Time{}, 0, err
		}
		for rows.Next() {
			var ev string
			var at int64
			if err := rows.Scan(&ev, &at); err != nil {
				rows.Close()
				return time.Time{}, 0, err
			}
			if cur, ok := first[ev]; !ok || at < cur {
				first[ev] = at
			}
		}
		rows.Close()
	}
	var last int64
	for _, at := range first {
		last = max(last, at)
	}
	return time.Unix(0, last), len(first), nil
}

// Merge copies every ledger into one new file at path (a key recorded by two workers adds their
// runs) and returns it open, for Tally.
func (ls *Ledgers) Merge(path string) (*Ledger, error) {
	all, err := ls.all()
	if err != nil {
		return nil, err
	}
	_ = os.Remove(path)
	m, err := OpenLedger(path)
	if err != nil {
		return nil, err
	}
	for _, l := range all {
		rows, err := l.db.Query(`SELECT key, kind, execution, event, worker, runs, at, fire_at FROM effects`)
		if err != nil {
			m.Close()
			return nil, err
		}
		tx, err := m.db.Begin()
		if err != nil {
			rows.Close()
			m.Close()
			return nil, err
		}
		for rows.Next() {
			var key, kind, exe, ev, w string
			var runs int
			var at, due int64
			if err = rows.Scan(&key, &kind, &exe, &ev, &w, &runs, &at, &due); err != nil {
				break
			}
			if _, err = tx.Exec(`INSERT INTO effects (key, kind, execution, event, worker, runs, at, fire_at)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (key) DO UPDATE SET runs = runs + excluded.runs, at = min(at, excluded.at)`,
				key, kind, exe, ev, w, runs, at, due); err != nil {
				break
			}
		}
		rows.Close()
		if err == nil {
			err = rows.Err()
		}
		if err != nil {
			_ = tx.Rollback()
			m.Close()
			return nil, err
		}
		if err := tx.Commit(); err != nil {
			m.Close()
			return nil, err
		}
	}
	return m, nil
}
