package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/cli/backend"
)

// storeFlags are the flags of every command that opens a database.
type storeFlags struct {
	spec      string
	schema    string
	pgbouncer bool
	listenURL string
	create    bool
	waitDB    time.Duration
	// creates makes a missing SQLite file a new store without --create (migrate, whose job it is).
	creates bool
}

func (f *storeFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.spec, "store", "", "SQLite file path, or PostgreSQL URL (postgres://...) (required)")
	fl.StringVar(&f.schema, "schema", "", "PostgreSQL schema for stead's tables (default: the search_path)")
	fl.BoolVar(&f.pgbouncer, "pgbouncer", false, "the PostgreSQL URL goes through PgBouncer in transaction mode: send no named statements")
	fl.StringVar(&f.listenURL, "listen-url", "", "direct PostgreSQL URL for wake-ups (LISTEN), needed with --pgbouncer to wake in milliseconds instead of polling")
	if !f.creates {
		fl.BoolVar(&f.create, "create", false, "create the SQLite file of --store when it does not exist (without it, a missing file is an error)")
	}
	fl.DurationVar(&f.waitDB, "wait-for-db", 0, "keep trying to connect to PostgreSQL this long (\"30s\"), for a server that is starting (default: fail at once)")
}

// open opens the store and the transport named by --store, creating or migrating their schema.
func (f *storeFlags) open(ctx context.Context) (*backend.Backend, error) {
	return f.openWith(ctx, backend.Options{})
}

// connectDelay is the pause between connection attempts under --wait-for-db.
const connectDelay = 500 * time.Millisecond

// openWith is open with more options; the schema, PgBouncer and connection settings are taken
// from the flags.
func (f *storeFlags) openWith(ctx context.Context, o backend.Options) (*backend.Backend, error) {
	if f.spec == "" {
		return nil, usageError{errors.New("--store is required: a SQLite file path (add --create for a new one: SQLite needs no server) or a postgres:// URL")}
	}
	if f.waitDB < 0 {
		return nil, usageError{fmt.Errorf("--wait-for-db %v: want a duration of 0 or more", f.waitDB)}
	}
	if !backend.IsPostgres(f.spec) {
		if f.waitDB > 0 {
			return nil, usageError{errors.New("--wait-for-db applies to PostgreSQL only")}
		}
		if strings.Contains(f.spec, "://") {
			return nil, usageError{fmt.Errorf("--store %q: want a SQLite file path or a postgres:// URL", backend.Redact(f.spec))}
		}
		if _, err := os.Stat(f.spec); errors.Is(err, os.ErrNotExist) && !f.create && !f.creates {
			return nil, usageError{fmt.Errorf("--store %s: no such file: give --create to make a new SQLite store there", f.spec)}
		}
	}
	o.Schema, o.PgBouncer, o.ListenURL = f.schema, f.pgbouncer, f.listenURL
	// One attempt unless told to wait: a refused connection or a missing database is reported at
	// once, not after a retry loop meant for servers that are starting.
	o.ConnectAttempts, o.ConnectDelay = 1, connectDelay
	if f.waitDB > 0 {
		o.ConnectAttempts = int(f.waitDB/connectDelay) + 1
	}
	return backend.Open(ctx, f.spec, o)
}
