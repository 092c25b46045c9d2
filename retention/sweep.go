package retention

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
)

// Sweep selects the trees PurgeFinished deletes: roots that finished before a cutoff, with a
// status among Statuses.
type Sweep struct {
	// Before is the cutoff: roots that finished strictly before it. Set it or OlderThan.
	Before time.Time
	// OlderThan sets the cutoff to Now minus it.
	OlderThan time.Duration
	// Now is the clock OlderThan counts from (default time.Now).
	Now func() time.Time
	// Statuses are the root statuses swept: done, cancelled or both (the default). A failed root
	// is never swept: it must be ended first.
	Statuses []stead.Status
	// DefinitionID, when set, sweeps the roots of that definition only.
	DefinitionID string
	// Limit bounds how many roots the sweep tries, purged or refused (0: no bound), so that a
	// large backlog is worked off in runs of bounded length.
	Limit int
	// DryRun checks every tree (and calls Archive) but deletes nothing.
	DryRun bool
	// Archive, when set, sees each tree before it is deleted (see Archiver).
	Archive Archiver
	// Progress, when set, is called after each page of roots with the report so far.
	Progress func(SweepReport)
}

// SweepReport is what PurgeFinished did.
type SweepReport struct {
	Cutoff time.Time
	DryRun bool
	// Examined counts the roots that finished before the cutoff.
	Examined int
	// Skipped counts those whose status the sweep does not take (failed, or a status left out).
	Skipped int
	// Purged counts the trees deleted and Deleted their executions (in a dry run, those that
	// would be).
	Purged, Deleted int
	// Refused holds the trees that were not purged, with why: a member not ended (a
	// *stead.StatusError), a member that moved on (ErrConflict), an archiver's veto (ErrVeto), a
	// root that vanished meanwhile (ErrNotFound).
	Refused []Refusal
}

// Refusal is one tree a sweep did not purge, and why.
type Refusal struct {
	Root string
	Err  error
}

// PurgeFinished purges, tree by tree (PurgeTree), the roots that finished before the cutoff with
// one of the statuses, page by page in id order. A tree that is refused is reported and the sweep
// goes on; an error of the store, or an archiver's error that is not a veto, stops it and is
// returned with the report so far. A sweep with nothing to purge is not an error.
func PurgeFinished(ctx context.Context, s *stead.Store, sw Sweep) (SweepReport, error) {
	cutoff, err := sw.cutoff()
	if err != nil {
		return SweepReport{}, err
	}
	statuses := sw.Statuses
	if len(statuses) == 0 {
		statuses = []stead.Status{stead.StatusDone, stead.StatusCancelled}
	}
	for _, st := range statuses {
		if st != stead.StatusDone && st != stead.StatusCancelled {
			return SweepReport{}, check.Invalidf("a sweep purges done or cancelled roots, not %q ones", st)
		}
	}
	if sw.Limit < 0 {
		return SweepReport{}, check.Invalidf("negative sweep limit %d", sw.Limit)
	}
	rep := SweepReport{Cutoff: cutoff, DryRun: sw.DryRun}
	// Roots by finish time alone, statuses checked here: the index of finished roots serves this
	// listing in id order on every SQL backend, where a filter on two statuses may not.
	f := stead.ListFilter{DefinitionID: sw.DefinitionID, RootsOnly: true,
		Finished: stead.TimeRange{Before: cutoff}, Limit: stead.MaxListLimit / 2}
	tried := 0
	for {
		page, err := s.List(ctx, f)
		if err != nil {
			return rep, fmt.Errorf("retention: list finished roots: %w", err)
		}
		for _, it := range page.Items {
			if sw.Limit > 0 && tried >= sw.Limit {
				return rep, nil
			}
			rep.Examined++
			if !slices.Contains(statuses, it.Status) {
				rep.Skipped++
				continue
			}
			tried++
			res, err := PurgeTree(ctx, s, it.ID, Options{Archive: sw.Archive, DryRun: sw.DryRun})
			switch {
			case err == nil && sw.DryRun:
				rep.Purged++
				rep.Deleted += len(res.Members)
			case err == nil:
				rep.Purged++
				rep.Deleted += res.Deleted
			case refusal(err):
				rep.Refused = append(rep.Refused, Refusal{Root: it.ID, Err: err})
			default:
				return rep, err
			}
		}
		if sw.Progress != nil {
			sw.Progress(rep)
		}
		if page.NextCursor == "" {
			return rep, nil
		}
		f.Cursor = page.NextCursor
	}
}

// refusal reports whether err refuses one tree and lets a sweep go on.
func refusal(err error) bool {
	return errors.Is(err, ErrVeto) || errors.Is(err, stead.ErrInvalid) ||
		errors.Is(err, stead.ErrConflict) || errors.Is(err, stead.ErrNotFound)
}

func (sw Sweep) cutoff() (time.Time, error) {
	switch {
	case sw.Before.IsZero() == (sw.OlderThan == 0):
		return time.Time{}, check.Invalidf("a sweep needs a cutoff: Before or OlderThan, not both")
	case sw.OlderThan < 0:
		return time.Time{}, check.Invalidf("negative sweep age %v", sw.OlderThan)
	case !sw.Before.IsZero():
		return check.Time("sweep cutoff", sw.Before)
	}
	now := time.Now
	if sw.Now != nil {
		now = sw.Now
	}
	return check.Time("sweep cutoff", now().Add(-sw.OlderThan))
}
