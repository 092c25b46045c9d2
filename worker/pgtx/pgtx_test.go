package pgtx_test

import (
	"context"
	"errors"
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgdb/pgdbtest"
	"github.com/steadhq/stead/pgstore"
	"github.com/steadhq/stead/transport/memtransport"
	"github.com/steadhq/stead/transport/pgtransport"
	"github.com/steadhq/stead/worker/pgtx"
)

// TestNewRefuses checks that only a pgstore store and a pgtransport transport on one pool make a
// shared database: anything else would run the "shared" transaction on one side only.
func TestNewRefuses(t *testing.T) {
	ctx := context.Background()
	schema := pgdbtest.Schema(t)
	open := func() *stead.Store {
		pool, err := pgdb.Open(ctx, pgdbtest.URL(), pgdb.Config{MaxConns: 2})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(pool.Close)
		s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	s1, s2 := open(), open()
	pool := s2.Backend().(*pgstore.Backend).Pool()
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tr.Close() })
	mem, memtr := memstore.New(), memtransport.New()
	t.Cleanup(func() { mem.Close(); memtr.Close() })
	for _, c := range []struct {
		name string
		err  func() error
	}{
		{"memory store", func() error { _, err := pgtx.New(mem, tr); return err }},
		{"memory transport", func() error { _, err := pgtx.New(s2, memtr); return err }},
		{"two pools", func() error { _, err := pgtx.New(s1, tr); return err }},
		{"nil store", func() error { _, err := pgtx.New(nil, tr); return err }},
	} {
		if err := c.err(); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", c.name, err)
		}
	}
	if _, err := pgtx.New(s2, tr); err != nil {
		t.Fatalf("one pool: %v", err)
	}
}
