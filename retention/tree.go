package retention

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/internal/check"
)

// ErrVeto is what an archiver wraps to refuse the purge of one tree: nothing of it is deleted,
// and a sweep records the refusal and goes on. Any other archiver error vetoes the tree as well
// and stops a sweep.
var ErrVeto = errors.New("retention: the archiver vetoed the purge")

// Tree is an execution and its descendants as an archiver sees them, before anything of them is
// deleted.
type Tree struct {
	Root string
	// Executions holds the root first, then every descendant in id order.
	Executions []*stead.Execution
	// Traces holds the trace steps of each member, by id (none for an untraced one).
	Traces map[string][]stead.TraceStep
}

// Archiver keeps a tree somewhere before it is deleted; an error vetoes the purge (see ErrVeto).
// It must be idempotent by the root's id: a purge that was cut short and runs again archives
// what is left of the tree again.
type Archiver func(ctx context.Context, t Tree) error

// Options tune PurgeTree.
type Options struct {
	// Archive, when set, sees the tree before anything is deleted.
	Archive Archiver
	// DryRun collects and checks the tree (and calls Archive) but deletes nothing.
	DryRun bool
}

// TreeResult is what PurgeTree found and did.
type TreeResult struct {
	Root string
	// Members are the ids of the tree, the root first, then the descendants in id order.
	Members []string
	// Deleted is how many members were deleted (0 in a dry run).
	Deleted int
}

// PurgeTree deletes the execution rootID and every descendant, if every one of them is done or
// cancelled. Refusals write nothing: a missing root is ErrNotFound, a root that has a parent is
// ErrInvalid (purge the root of its tree), a member that has not ended is a *stead.StatusError
// naming it, an archiver's error vetoes the purge (wrapped as it came). A member that commits
// between the check and its deletion stops the purge with a *stead.ConflictError, the root still
// stored; run it again once the member has ended.
func PurgeTree(ctx context.Context, s *stead.Store, rootID string, opts Options) (TreeResult, error) {
	if err := check.ID("root id", rootID); err != nil {
		return TreeResult{}, err
	}
	tree, gone, err := collect(ctx, s, rootID)
	if err != nil {
		return TreeResult{}, err
	}
	res := TreeResult{Root: rootID, Members: make([]string, len(tree))}
	for i, e := range tree {
		res.Members[i] = e.ID
	}
	root := tree[0]
	if root.ParentID != "" {
		return res, check.Invalidf("purge %q: it is a child of %q; purge the root of its tree", rootID, root.ParentID)
	}
	for i, e := range tree {
		if !purgeable(e, i == 0) {
			return res, &stead.StatusError{ID: e.ID, Op: "purge", Status: e.Status,
				Reason: fmt.Sprintf("the root of %q must be done or cancelled, and every descendant done, cancelled or failed", rootID)}
		}
	}
	if opts.Archive != nil {
		t := Tree{Root: rootID, Executions: tree, Traces: make(map[string][]stead.TraceStep, len(tree))}
		for _, e := range tree {
			steps, err := s.ReadTrace(ctx, e.ID)
			if err != nil {
				return res, fmt.Errorf("retention: trace of %q: %w", e.ID, err)
			}
			if len(steps) > 0 {
				t.Traces[e.ID] = steps
			}
		}
		if err := opts.Archive(ctx, t); err != nil {
			return res, fmt.Errorf("retention: archive of %q: %w", rootID, err)
		}
	}
	if opts.DryRun {
		return res, nil
	}
	// Deepest first, so that whatever a crash leaves is still a tree under the root, and the
	// root last, so that it can be purged again.
	order := deepestFirst(tree)
	for _, e := range order[:len(order)-1] {
		if err := purgeOne(ctx, s, e); err != nil {
			return res, err
		}
		res.Deleted++
	}
	// Children a member still names but that are stored no more: sweep their leftovers (an
	// outbox row addressed to them, say).
	for _, id := range gone {
		if _, err := s.Purge(ctx, id, 0); err != nil {
			return res, fmt.Errorf("retention: sweep %q: %w", id, err)
		}
	}
	if err := purgeOne(ctx, s, root); err != nil {
		return res, err
	}
	res.Deleted++
	return res, nil
}

// purgeable reports whether a member's status lets its tree be purged. The root must be done or
// cancelled. A descendant may also be failed: its failure was reported to its parent when it
// happened, and once the root has finished nothing takes a descendant's result any more — a retry
// applies to roots only, and the cancel that ends a finishing tree reaches only its unfinished
// members — so a failed descendant would otherwise keep its tree forever.
func purgeable(e *stead.Execution, root bool) bool {
	switch e.Status {
	case stead.StatusDone, stead.StatusCancelled:
		return true
	case stead.StatusFailed:
		return !root
	}
	return false
}

func purgeOne(ctx context.Context, s *stead.Store, e *stead.Execution) error {
	ok, err := s.Purge(ctx, e.ID, e.Version)
	if err != nil {
		return fmt.Errorf("retention: purge %q: %w", e.ID, err)
	}
	if !ok {
		// It committed since it was checked (or was purged by someone else): whatever it is now
		// was not checked, so the purge stops here.
		return fmt.Errorf("retention: purge %q moved on since it was checked: %w", e.ID,
			&stead.ConflictError{ID: e.ID, Expected: e.Version, Found: -1})
	}
	return nil
}

// collect loads the tree of rootID: the root first, then the members in id order, and the ids
// of children that members name but that are not stored.
func collect(ctx context.Context, s *stead.Store, rootID string) ([]*stead.Execution, []string, error) {
	root, err := s.Load(ctx, rootID)
	if err != nil {
		return nil, nil, fmt.Errorf("retention: %w", err)
	}
	found := map[string]*stead.Execution{rootID: root}
	missing := map[string]bool{}
	// Everything stored under the prefix: descendants the join state forgot are found too.
	f := stead.ListFilter{IDPrefix: rootID + ":", Limit: stead.MaxListLimit}
	for {
		page, err := s.List(ctx, f)
		if err != nil {
			return nil, nil, fmt.Errorf("retention: descendants of %q: %w", rootID, err)
		}
		for _, it := range page.Items {
			if err := load(ctx, s, it.ID, found, missing); err != nil {
				return nil, nil, err
			}
		}
		if page.NextCursor == "" {
			break
		}
		f.Cursor = page.NextCursor
	}
	// Everything the join states name, whatever its id.
	for queue := []string{rootID}; len(queue) > 0; {
		e := found[queue[0]]
		queue = queue[1:]
		if e == nil {
			continue
		}
		for _, id := range slices.Sorted(maps.Keys(e.Children)) {
			if _, seen := found[id]; seen || missing[id] {
				continue
			}
			if err := load(ctx, s, id, found, missing); err != nil {
				return nil, nil, err
			}
			queue = append(queue, id)
		}
	}
	// A member's parent chain reaches the root through members; an execution that only shares
	// the prefix is someone else's.
	tree := []*stead.Execution{root}
	for _, id := range slices.Sorted(maps.Keys(found)) {
		if id != rootID && reaches(found, id, rootID) {
			tree = append(tree, found[id])
		}
	}
	return tree, slices.Sorted(maps.Keys(missing)), nil
}

func load(ctx context.Context, s *stead.Store, id string, found map[string]*stead.Execution, missing map[string]bool) error {
	e, err := s.Load(ctx, id)
	switch {
	case errors.Is(err, stead.ErrNotFound):
		missing[id] = true
		return nil
	case err != nil:
		return fmt.Errorf("retention: load %q: %w", id, err)
	}
	found[id] = e
	return nil
}

// reaches reports whether the parent chain of id leads to root through found executions.
func reaches(found map[string]*stead.Execution, id, root string) bool {
	for hops := 0; hops <= len(found); hops++ {
		e := found[id]
		if e == nil || e.ParentID == "" {
			return false
		}
		if e.ParentID == root {
			return true
		}
		id = e.ParentID
	}
	return false // a cycle: not a tree
}

// deepestFirst orders a tree so that every member comes before its parent: by depth, deepest
// first, then by id; the root is last.
func deepestFirst(tree []*stead.Execution) []*stead.Execution {
	byID := make(map[string]*stead.Execution, len(tree))
	for _, e := range tree {
		byID[e.ID] = e
	}
	depth := func(e *stead.Execution) int {
		d := 0
		for p := byID[e.ParentID]; p != nil && d <= len(tree); p = byID[p.ParentID] {
			d++
		}
		return d
	}
	out := slices.Clone(tree)
	slices.SortStableFunc(out, func(a, b *stead.Execution) int {
		return cmp.Or(cmp.Compare(depth(b), depth(a)), strings.Compare(a.ID, b.ID))
	})
	return out
}
