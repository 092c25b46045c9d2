package memstore_test

import (
	"errors"
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

// TestAttributesChangedOnTheExecutionAreRefused holds memstore to its own check: attributes
// change through Bundle.Attributes, which the SQL backends index; a change made on the execution
// alone is refused and writes nothing.
func TestAttributesChangedOnTheExecutionAreRefused(t *testing.T) {
	ctx := t.Context()
	s := memstore.New()
	defer s.Close()
	exe := &stead.Execution{ID: "e", DefinitionID: "d", Status: stead.StatusRunning,
		Attributes: map[string]stead.AttrValue{"stage": stead.AttrString("a")}}
	c, err := s.Commit(ctx, exe, stead.Bundle{})
	if err != nil {
		t.Fatal(err)
	}
	exe.Version = c.Version
	for name, attrs := range map[string]map[string]stead.AttrValue{
		"changed": {"stage": stead.AttrString("b")},
		"added":   {"stage": stead.AttrString("a"), "x": stead.AttrInt(1)},
		"removed": nil,
	} {
		e := exe.Clone()
		e.Attributes = attrs
		if _, err := s.Commit(ctx, e, stead.Bundle{}); !errors.Is(err, stead.ErrInvalid) {
			t.Errorf("%s on the execution: %v, want ErrInvalid", name, err)
		}
	}
	// The same change through the bundle, applied to the execution too, is fine.
	e := exe.Clone()
	e.Attributes = map[string]stead.AttrValue{"stage": stead.AttrString("b")}
	if _, err := s.Commit(ctx, e, stead.Bundle{Attributes: map[string]stead.AttrValue{"stage": stead.AttrString("b")}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Load(ctx, "e")
	if err != nil || got.Attributes["stage"] != stead.AttrString("b") || got.Version != exe.Version+1 {
		t.Fatalf("Load = %+v, %v", got, err)
	}
}
