package sqlitestore

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/sqlitedb"
)

// BenchmarkCeilingStateOnly is the ceiling of BenchmarkCommitStateOnly/NORMAL: the statements of
// a state-only commit run on the database's writer connection with the store's prepared statements,
// the record encoded ahead, no validation, no error mapping. The store's rate divided by this one
// is what the store's own work costs.
func BenchmarkCeilingStateOnly(b *testing.B) {
	ctx := context.Background()
	db, err := sqlitedb.Open(ctx, sqlitedb.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := New(ctx, db)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	exe := &stead.Execution{
		ID: "e", DefinitionID: "order", Status: stead.StatusRunning, ActivePath: "order/paying/awaiting",
		History:   map[string]string{"order": "order/paying", "order/paying": "order/paying/awaiting"},
		Context:   json.RawMessage(`{"order_id":"A-1029","amount":4999,"currency":"EUR","items":[{"sku":"x","n":2},{"sku":"y","n":1}],"attempts":0}`),
		CreatedAt: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC),
		UpdatedAt: time.Date(2030, 1, 1, 0, 0, 1, 0, time.UTC),
	}
	c, err := s.Commit(ctx, exe, stead.Bundle{})
	if err != nil {
		b.Fatal(err)
	}
	exe.Version = c.Version
	data, err := stead.EncodeExecution(exe)
	if err != nil {
		b.Fatal(err)
	}
	st := &s.Backend().(*backend).w
	created, updated := exe.CreatedAt.UnixMicro(), exe.UpdatedAt.UnixMicro()
	b.ReportAllocs()
	cpu := StartCPU()
	for v := int64(1); b.Loop(); v++ {
		tx, err := db.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		r, err := st.CommitUpdate.ExecContext(bg, "", exe.ActivePath, v+1, created, updated, data, "e", v)
		if err != nil {
			b.Fatal(err)
		}
		if n, _ := r.RowsAffected(); n != 1 {
			b.Fatalf("lost the CAS at %d", v)
		}
		if _, err := st.CommitIndexed.ExecContext(bg, "e", "order", "running", "", nil); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(ctx); err != nil {
			b.Fatal(err)
		}
	}
	cpu.Report(b)
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
}
