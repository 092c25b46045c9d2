package cli

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/cli/backend"
	"github.com/steadhq/stead/schedule"
	"github.com/steadhq/stead/worker"
)

// applyDeclared makes the store's schedules match what the definitions declare ("schedules:"),
// each definition's newest version speaking for it, before this process fires any: several
// processes starting together apply the same declarations and each schedule is created once.
func applyDeclared(ctx context.Context, b *backend.Backend, machines worker.Machines, log *slog.Logger) error {
	newest := map[string]*chart.Definition{}
	for _, m := range machines {
		e, ok := m.(*chart.Engine)
		if !ok {
			continue
		}
		def := e.Definition()
		if old := newest[def.ID]; old == nil || def.Version > old.Version {
			newest[def.ID] = def
		}
	}
	var decl []schedule.Schedule
	for _, def := range newest {
		decl = append(decl, schedule.Declared(def)...)
	}
	if len(decl) == 0 {
		return nil
	}
	s, err := schedule.For(b.Store)
	if err != nil {
		return fmt.Errorf("definitions declare %d schedules, but this store keeps none: %w", len(decl), err)
	}
	a, err := s.Apply(ctx, decl)
	if err != nil {
		return fmt.Errorf("apply declared schedules: %w", err)
	}
	log.Info("declared schedules applied", slog.Int("created", a.Created), slog.Int("updated", a.Updated), slog.Int("unchanged", a.Unchanged))
	return nil
}
