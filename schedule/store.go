package schedule

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
)

// Record is a schedule as a Backend keeps it: its configuration as one JSON document, and the
// columns the runner reads and swaps. Times are UTC at microsecond precision; zero is unset.
type Record struct {
	ID              string
	Data            []byte
	Paused          bool
	NextTick        time.Time
	LastTick        time.Time
	LastExecutionID string
	Version         int64
	UpdatedAt       time.Time
}

// Advance is what a claim writes: the schedule's new next tick and, when Fired is set, the tick
// that started an execution and that execution.
type Advance struct {
	NextTick        time.Time
	Fired           bool
	LastTick        time.Time
	LastExecutionID string
	UpdatedAt       time.Time
}

// Backend keeps schedules: memstore, sqlitestore and pgstore implement it (reach it through
// For). Its methods take arguments the Store has checked; call the Store's instead. schedtest
// proves a Backend right.
type Backend interface {
	// CreateSchedule inserts r; an id that is taken is ErrAlreadyExists.
	CreateSchedule(ctx context.Context, r Record) error
	// GetSchedule returns the schedule, or ErrNotFound.
	GetSchedule(ctx context.Context, id string) (Record, error)
	// ListSchedules returns up to limit schedules with ids after after, by id.
	ListSchedules(ctx context.Context, after string, limit int) ([]Record, error)
	// UpdateSchedule replaces the schedule if its version is r.Version-1: ErrNotFound if there
	// is none, a *stead.ConflictError otherwise.
	UpdateSchedule(ctx context.Context, r Record) error
	// DeleteSchedule deletes the schedule, or returns ErrNotFound.
	DeleteSchedule(ctx context.Context, id string) error
	// DueSchedules returns up to limit schedules that are not paused and whose next tick is at
	// or before now, earliest first.
	DueSchedules(ctx context.Context, now time.Time, limit int) ([]Record, error)
	// AdvanceSchedule writes a and grows the version if and only if the schedule is not
	// paused and its next tick is still from: the compare-and-swap that lets one claim of a
	// tick win however many runners race for it. It reports whether it did.
	AdvanceSchedule(ctx context.Context, id string, from time.Time, a Advance) (bool, error)
}

// Provider is a stead.Backend that keeps schedules too.
type Provider interface {
	Schedules() Backend
}

// For returns the Store of schedules kept beside the executions of st, or an error wrapping
// ErrInvalid when st's backend keeps none.
func For(st *stead.Store) (*Store, error) {
	p, ok := st.Backend().(Provider)
	if !ok {
		return nil, check.Invalidf("schedule: this store's backend (%T) keeps no schedules", st.Backend())
	}
	return New(p.Schedules()), nil
}

// Store is the checked front of a Backend: it refuses bad input with an error wrapping
// stead.ErrInvalid before the backend sees it, computes next ticks, and retries the
// read-modify-write of Pause and Resume. Safe for concurrent use.
type Store struct {
	b Backend
	// Clock is the time the store computes next ticks from (default time.Now).
	Clock func() time.Time
}

// New returns the Store in front of b.
func New(b Backend) *Store {
	if b == nil {
		panic("schedule: New of a nil Backend")
	}
	return &Store{b: b}
}

// Backend returns the backend behind s.
func (s *Store) Backend() Backend { return s.b }

func (s *Store) now() time.Time {
	if s.Clock != nil {
		return s.Clock().UTC().Truncate(time.Microsecond)
	}
	return time.Now().UTC().Truncate(time.Microsecond)
}

// Create stores sc (its defaults filled in, its next tick the first after now) and returns it as
// stored. A taken id is ErrAlreadyExists; invalid input is ErrInvalid.
func (s *Store) Create(ctx context.Context, sc Schedule) (*Schedule, error) {
	sp, err := sc.validate()
	if err != nil {
		return nil, err
	}
	now := s.now()
	next := sp.next(now)
	if next.IsZero() {
		return nil, check.Invalidf("schedule %q: cron expression %q never fires", sc.ID, sc.Cron)
	}
	sc.NextTick, sc.LastTick, sc.LastExecutionID = next, time.Time{}, ""
	sc.Version, sc.CreatedAt, sc.UpdatedAt = 1, now, now
	if err := s.b.CreateSchedule(ctx, encode(&sc)); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Get returns the schedule, or an error wrapping ErrNotFound.
func (s *Store) Get(ctx context.Context, id string) (*Schedule, error) {
	if err := check.ID("schedule id", id); err != nil {
		return nil, err
	}
	r, err := s.b.GetSchedule(ctx, id)
	if err != nil {
		return nil, err
	}
	return decode(r)
}

// MaxList bounds a page of List.
const MaxList = 1000

// List returns up to limit schedules (default and at most MaxList) with ids after after, by id.
func (s *Store) List(ctx context.Context, after string, limit int) ([]*Schedule, error) {
	if err := check.Text("after", after); err != nil {
		return nil, err
	}
	limit, err := check.Limit("limit", limit, MaxList, MaxList)
	if err != nil {
		return nil, err
	}
	rs, err := s.b.ListSchedules(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return decodeAll(rs)
}

func decodeAll(rs []Record) ([]*Schedule, error) {
	out := make([]*Schedule, 0, len(rs))
	for _, r := range rs {
		sc, err := decode(r)
		if err != nil {
			return nil, err
		}
		out = append(out, sc)
	}
	return out, nil
}

// Update replaces the schedule's configuration if it is still at sc.Version (as Get returned
// it): otherwise it returns a *stead.ConflictError and writes nothing. A changed timing, or a
// schedule resumed, takes its next tick from now: ticks due while it was paused are not caught
// up. The store's own fields (last tick, created at) keep their stored values.
func (s *Store) Update(ctx context.Context, sc Schedule) (*Schedule, error) {
	sp, err := sc.validate()
	if err != nil {
		return nil, err
	}
	old, err := s.Get(ctx, sc.ID)
	if err != nil {
		return nil, err
	}
	if old.Version != sc.Version {
		return nil, &stead.ConflictError{ID: sc.ID, Expected: sc.Version, Found: old.Version}
	}
	now := s.now()
	sc.NextTick = old.NextTick
	if sc.Cron != old.Cron || sc.TimeZone != old.TimeZone || sc.Every != old.Every || (old.Paused && !sc.Paused) {
		if sc.NextTick = sp.next(now); sc.NextTick.IsZero() {
			return nil, check.Invalidf("schedule %q: cron expression %q never fires", sc.ID, sc.Cron)
		}
	}
	sc.LastTick, sc.LastExecutionID, sc.CreatedAt = old.LastTick, old.LastExecutionID, old.CreatedAt
	sc.Version, sc.UpdatedAt = old.Version+1, now
	if err := s.b.UpdateSchedule(ctx, encode(&sc)); err != nil {
		return nil, err
	}
	return &sc, nil
}

// Modify applies fn to the stored schedule and updates it, again from a fresh read as long as a
// concurrent write (a runner's claim) wins the race.
func (s *Store) Modify(ctx context.Context, id string, fn func(*Schedule) error) (*Schedule, error) {
	for {
		sc, err := s.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := fn(sc); err != nil {
			return nil, err
		}
		out, err := s.Update(ctx, *sc)
		if errors.Is(err, stead.ErrConflict) {
			continue
		}
		return out, err
	}
}

// Pause stops the schedule's ticks until Resume.
func (s *Store) Pause(ctx context.Context, id string) (*Schedule, error) {
	return s.Modify(ctx, id, func(sc *Schedule) error { sc.Paused = true; return nil })
}

// Resume restarts the schedule's ticks from now.
func (s *Store) Resume(ctx context.Context, id string) (*Schedule, error) {
	return s.Modify(ctx, id, func(sc *Schedule) error { sc.Paused = false; return nil })
}

// Delete deletes the schedule, or returns an error wrapping ErrNotFound. The executions it
// started are left alone.
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := check.ID("schedule id", id); err != nil {
		return err
	}
	return s.b.DeleteSchedule(ctx, id)
}

// Due returns up to limit schedules due at now, earliest first.
func (s *Store) Due(ctx context.Context, now time.Time, limit int) ([]*Schedule, error) {
	now, err := check.RequiredTime("now", now)
	if err != nil {
		return nil, err
	}
	limit, err = check.Limit("limit", limit, MaxList, MaxList)
	if err != nil {
		return nil, err
	}
	rs, err := s.b.DueSchedules(ctx, now, limit)
	if err != nil {
		return nil, err
	}
	return decodeAll(rs)
}

// Claim moves the schedule's next tick from from to a.NextTick if no one moved it first, and
// reports whether it did: of many runners claiming one tick, exactly one wins.
func (s *Store) Claim(ctx context.Context, id string, from time.Time, a Advance) (bool, error) {
	if err := check.ID("schedule id", id); err != nil {
		return false, err
	}
	var err error
	if from, err = check.RequiredTime("from", from); err != nil {
		return false, err
	}
	if a.NextTick, err = check.RequiredTime("next tick", a.NextTick); err != nil {
		return false, err
	}
	if a.LastTick, err = check.Time("last tick", a.LastTick); err != nil {
		return false, err
	}
	if err := check.Text("last execution id", a.LastExecutionID); err != nil {
		return false, err
	}
	if a.Fired && (a.LastTick.IsZero() || a.LastExecutionID == "") {
		return false, fmt.Errorf("%w: a fired claim names its tick and execution", stead.ErrInvalid)
	}
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = s.now()
	}
	a.UpdatedAt = a.UpdatedAt.UTC().Truncate(time.Microsecond)
	return s.b.AdvanceSchedule(ctx, id, from, a)
}
