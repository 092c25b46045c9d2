package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	"github.com/steadhq/stead/cmd/stead/internal/backend"
)

// storeFlags are the flags of every command that opens a database.
type storeFlags struct {
	spec      string
	schema    string
	pgbouncer bool
	listenURL string
}

func (f *storeFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.spec, "store", "", "SQLite file path, or PostgreSQL URL (postgres://...) (required)")
	cmd.Flags().StringVar(&f.schema, "schema", "", "PostgreSQL schema for stead's tables (default: the search_path)")
	cmd.Flags().BoolVar(&f.pgbouncer, "pgbouncer", false, "the PostgreSQL URL goes through PgBouncer in transaction mode: send no named statements")
	cmd.Flags().StringVar(&f.listenURL, "listen-url", "", "direct PostgreSQL URL for wake-ups (LISTEN), needed with --pgbouncer to wake in milliseconds instead of polling")
}

// open opens the store and the transport named by --store, creating or migrating their schema.
func (f *storeFlags) open(ctx context.Context) (*backend.Backend, error) {
	return f.openWith(ctx, backend.Options{})
}

// openWith is open with more options; Schema is taken from the flags.
func (f *storeFlags) openWith(ctx context.Context, o backend.Options) (*backend.Backend, error) {
	if f.spec == "" {
		return nil, usageError{errors.New("--store is required (a SQLite file path or a postgres:// URL)")}
	}
	o.Schema, o.PgBouncer, o.ListenURL = f.schema, f.pgbouncer, f.listenURL
	return backend.Open(ctx, f.spec, o)
}
