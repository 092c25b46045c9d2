package memstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/schedule"
)

// schedules keeps a store's schedules. Its lock is its own: a runner's claims never wait for a
// commit of executions.
type schedules struct {
	mu   sync.Mutex
	rows map[string]schedule.Record
}

var _ schedule.Provider = (*backend)(nil)

// Schedules returns the store's schedule backend (schedule.For finds it).
func (b *backend) Schedules() schedule.Backend { return &b.sched }

func cloneRecord(r schedule.Record) schedule.Record {
	r.Data = slices.Clone(r.Data)
	return r
}

func (s *schedules) CreateSchedule(_ context.Context, r schedule.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = make(map[string]schedule.Record)
	}
	if _, ok := s.rows[r.ID]; ok {
		return fmt.Errorf("memstore: schedule %q: %w", r.ID, stead.ErrAlreadyExists)
	}
	s.rows[r.ID] = cloneRecord(r)
	return nil
}

func (s *schedules) GetSchedule(_ context.Context, id string) (schedule.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok {
		return schedule.Record{}, fmt.Errorf("memstore: schedule %q: %w", id, stead.ErrNotFound)
	}
	return cloneRecord(r), nil
}

func (s *schedules) ListSchedules(_ context.Context, after string, limit int) ([]schedule.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []schedule.Record
	for id, r := range s.rows {
		if id > after {
			out = append(out, cloneRecord(r))
		}
	}
	slices.SortFunc(out, func(a, b schedule.Record) int { return strings.Compare(a.ID, b.ID) })
	return out[:min(limit, len(out))], nil
}

func (s *schedules) UpdateSchedule(_ context.Context, r schedule.Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.rows[r.ID]
	if !ok {
		return fmt.Errorf("memstore: schedule %q: %w", r.ID, stead.ErrNotFound)
	}
	if old.Version != r.Version-1 {
		return &stead.ConflictError{ID: r.ID, Expected: r.Version - 1, Found: old.Version}
	}
	s.rows[r.ID] = cloneRecord(r)
	return nil
}

func (s *schedules) DeleteSchedule(_ context.Context, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.rows[id]; !ok {
		return fmt.Errorf("memstore: schedule %q: %w", id, stead.ErrNotFound)
	}
	delete(s.rows, id)
	return nil
}

func (s *schedules) DueSchedules(_ context.Context, now time.Time, limit int) ([]schedule.Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []schedule.Record
	for _, r := range s.rows {
		if !r.Paused && !r.NextTick.After(now) {
			out = append(out, cloneRecord(r))
		}
	}
	slices.SortFunc(out, func(a, b schedule.Record) int {
		if c := a.NextTick.Compare(b.NextTick); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out[:min(limit, len(out))], nil
}

func (s *schedules) AdvanceSchedule(_ context.Context, id string, from time.Time, a schedule.Advance) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.rows[id]
	if !ok || r.Paused || !r.NextTick.Equal(from) {
		return false, nil
	}
	r.NextTick = a.NextTick
	if a.Fired {
		r.LastTick, r.LastExecutionID = a.LastTick, a.LastExecutionID
	}
	r.Version++
	r.UpdatedAt = a.UpdatedAt
	s.rows[id] = r
	return true, nil
}
