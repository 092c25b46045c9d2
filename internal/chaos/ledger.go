package chaos

import (
	"database/sql"
	"fmt"
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

// AppliedBy returns when the last of the work events whose ids start with prefix was first
// applied, and how many of them were.
func (l *Ledger) AppliedBy(prefix string) (time.Time, int, error) {
	var at sql.NullInt64
	var n int
	err := l.db.QueryRow(`SELECT max(first), count(*) FROM (SELECT min(at) AS first FROM effects
		WHERE kind = ? AND substr(event, 1, ?) = ? GROUP BY execution, event)`,
		KindWork, len(prefix), prefix).Scan(&at, &n)
	if err != nil || !at.Valid {
		return time.Time{}, n, err
	}
	return time.Unix(0, at.Int64), n, nil
}
