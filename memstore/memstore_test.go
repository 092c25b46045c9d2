package memstore_test

import (
	"testing"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/memstore"
	"github.com/steadhq/stead/storetest"
)

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T, cfg storetest.Config) *stead.Store {
		var opts []memstore.Option
		if cfg.TraceCap > 0 {
			opts = append(opts, memstore.WithTraceCap(cfg.TraceCap))
		}
		s := memstore.New(opts...)
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestTraceCap(t *testing.T) {
	for _, c := range []struct {
		name  string
		opts  []memstore.Option
		steps int
		first int64 // index of the oldest step kept
	}{
		{"default keeps DefaultTraceCap", nil, memstore.DefaultTraceCap + 50, 50},
		{"explicit cap", []memstore.Option{memstore.WithTraceCap(5)}, 12, 7},
		{"zero disables the cap", []memstore.Option{memstore.WithTraceCap(0)}, memstore.DefaultTraceCap + 50, 0},
		{"negative disables the cap", []memstore.Option{memstore.WithTraceCap(-1)}, 300, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s := memstore.New(c.opts...)
			defer s.Close()
			exe := &stead.Execution{ID: "e", DefinitionID: "d", Status: stead.StatusRunning}
			if _, err := s.Save(ctx, exe); err != nil {
				t.Fatal(err)
			}
			for i := range c.steps {
				idx, err := s.AppendTrace(ctx, "e", stead.TraceStep{EventKind: "K"})
				if err != nil || idx != int64(i) {
					t.Fatalf("AppendTrace %d = %d, %v", i, idx, err)
				}
			}
			tr, err := s.ReadTrace(ctx, "e")
			if err != nil {
				t.Fatal(err)
			}
			if want := c.steps - int(c.first); len(tr) != want || tr[0].Index != c.first || tr[len(tr)-1].Index != int64(c.steps-1) {
				t.Fatalf("kept %d steps from index %d, want %d from %d", len(tr), tr[0].Index, want, c.first)
			}
		})
	}
}
