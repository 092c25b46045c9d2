package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
)

// Declared returns the schedules a definition declares (chart.Schedule, "schedules:" in YAML),
// each starting executions of the definition's unversioned id, so that a new version's
// executions start on the newest version a worker knows.
func Declared(def *chart.Definition) []Schedule {
	out := make([]Schedule, 0, len(def.Schedules))
	for _, d := range def.Schedules {
		out = append(out, Schedule{
			ID: d.ID, DefinitionID: def.ID, Context: d.Context,
			Cron: d.Cron, TimeZone: d.Zone, Every: d.Every, Jitter: d.Jitter,
			Overlap: Overlap(d.Overlap), CatchUp: CatchUp(d.CatchUp), CatchUpWindow: d.Window,
		})
	}
	return out
}

// Applied counts what Apply did.
type Applied struct {
	Created, Updated, Unchanged int
}

// Apply makes the stored schedules match the declarations scs: it creates those missing and
// updates the configuration of those that differ (their definition, context, timing, jitter,
// overlap and catch-up), leaving what an operator set at runtime — paused or not — and the
// ticks as they are, unless the timing changed (see Update). Several processes may apply the
// same declarations at once: each schedule ends as declared, created once. Every declaration is
// checked before anything is written; an invalid one is an error wrapping stead.ErrInvalid. A
// schedule stored but no longer declared is left alone (stead schedule delete removes it).
func (s *Store) Apply(ctx context.Context, scs []Schedule) (Applied, error) {
	var a Applied
	for _, sc := range scs {
		if _, err := sc.validate(); err != nil {
			return a, err
		}
	}
	for _, sc := range scs {
		_, err := s.Create(ctx, sc)
		if err == nil {
			a.Created++
			continue
		}
		if !errors.Is(err, stead.ErrAlreadyExists) {
			return a, fmt.Errorf("apply schedule %q: %w", sc.ID, err)
		}
		changed := false
		_, err = s.Modify(ctx, sc.ID, func(old *Schedule) error {
			want := *old
			want.DefinitionID, want.Context = sc.DefinitionID, sc.Context
			want.Cron, want.TimeZone, want.Every, want.Jitter = sc.Cron, sc.TimeZone, sc.Every, sc.Jitter
			want.Overlap, want.CatchUp, want.CatchUpWindow = sc.Overlap, sc.CatchUp, sc.CatchUpWindow
			if _, err := want.validate(); err != nil { // fills the defaults, as stored ones are
				return err
			}
			changed = !sameConfig(old, &want)
			if !changed {
				return errUnchanged
			}
			*old = want
			return nil
		})
		switch {
		case errors.Is(err, errUnchanged):
			a.Unchanged++
		case err != nil:
			return a, fmt.Errorf("apply schedule %q: %w", sc.ID, err)
		default:
			a.Updated++
		}
	}
	return a, nil
}

var errUnchanged = errors.New("schedule: unchanged")

// compact is raw without insignificant space, so that equal documents compare equal.
func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}

// sameConfig reports whether a and b are configured alike (what Apply sets).
func sameConfig(a, b *Schedule) bool {
	return a.DefinitionID == b.DefinitionID && bytes.Equal(compact(a.Context), compact(b.Context)) &&
		a.Cron == b.Cron && a.TimeZone == b.TimeZone && a.Every == b.Every && a.Jitter == b.Jitter &&
		a.Overlap == b.Overlap && a.CatchUp == b.CatchUp && a.CatchUpWindow == b.CatchUpWindow
}
