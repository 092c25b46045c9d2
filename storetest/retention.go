package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/retention"
)

// The rules of a tree purge (retention.PurgeTree) and of the sweep of finished roots
// (retention.PurgeFinished), which a backend serves with List by id prefix and Purge alone.
var purgeTreeRules = []rule{
	{name: "removes_the_whole_tree_and_nothing_else", run: testTreePurge},
	{name: "refuses_unless_every_member_ended", run: testTreeRefusesLiveMembers},
	{name: "takes_a_failed_descendant_of_a_finished_root", run: testTreeTakesFailedDescendant},
	{name: "refuses_a_child_as_root", run: testTreeRefusesChild},
	{name: "archiver_sees_the_tree_first_and_can_veto", run: testTreeArchiver},
	{name: "dry_run_deletes_nothing", run: testTreeDryRun},
	{name: "resumes_after_a_crash", run: testTreeResumes},
	{name: "racing_a_commit_stops_with_the_root_kept", run: testTreeRacingCommit},
}

var purgeFinishedRules = []rule{
	{name: "cutoff_statuses_and_limit", run: testSweepSelects},
	{name: "dry_run_deletes_nothing", run: testSweepDryRun},
	{name: "refusals_are_reported_and_the_run_goes_on", run: testSweepRefusals},
}

// treeNode is one member (or bystander) of the trees the rules build.
type treeNode struct {
	name, parent string
	status       stead.Status
	listed       bool // the parent's join state names it
}

// tree is a root with nested children and the bystanders a tree purge must not touch: one whose
// id extends the root's without the separator, and one under the root's prefix whose parent is
// someone else. "t:gone:0" is named by the root's join state but never stored.
var tree = []treeNode{
	{"t", "", stead.StatusDone, false},
	{"t:a:0", "t", stead.StatusDone, true},
	{"t:a:0:b:0", "t:a:0", stead.StatusCancelled, true},
	{"t:a:0:b:1", "t:a:0", stead.StatusDone, false}, // forgotten by the join state: found by prefix
	{"t:c:0", "t", stead.StatusCancelled, true},
	{"tx", "", stead.StatusDone, false},           // shares the prefix "t", not "t:"
	{"t:stray", "other", stead.StatusDone, false}, // under "t:", but another's child
	{"other", "", stead.StatusRunning, false},
}

var treeMembers = []string{"t", "t:a:0", "t:a:0:b:0", "t:a:0:b:1", "t:c:0"}

// seedTree commits the nodes with a step of every side effect each (the purgeBundle of the purge
// rules), finished ones with a finish time, and returns them by name.
func (h *harness) seedTree(nodes []treeNode, finished time.Time) map[string]*stead.Execution {
	out := map[string]*stead.Execution{}
	for _, n := range nodes {
		exe := h.newExe(n.name)
		exe.Status, exe.DeadLetter, exe.Children = n.status, nil, nil
		if n.status.Finished() {
			exe.FinishedAt = finished
		}
		if n.parent != "" {
			exe.ParentID, exe.ChildID = h.id(n.parent), n.name
		}
		out[n.name] = exe
	}
	for _, n := range nodes {
		if n.listed {
			p := out[n.parent]
			if p.Children == nil {
				p.Children = map[string]stead.ChildState{}
			}
			p.Children[h.id(n.name)] = stead.ChildState{RootPath: "r", Finished: true}
		}
	}
	if root := out["t"]; root != nil {
		root.Children[h.id("t:gone:0")] = stead.ChildState{RootPath: "r", Finished: true}
	}
	for _, n := range nodes {
		exe := out[n.name]
		h.commit(exe, purgeBundle(exe.ID, exe.ID))
	}
	// An entry addressed to the child that is gone, which the purge sweeps.
	sender := out[nodes[0].name]
	h.commit(sender, stead.Bundle{Emits: []stead.Emit{{Target: h.id("t:gone:0"), Event: stead.Event{ID: "late", Kind: "Late"}}}})
	return out
}

func (h *harness) present(names ...string) []string {
	h.Helper()
	var out []string
	for _, n := range names {
		if _, err := h.s.Load(h.ctx, h.id(n)); err == nil {
			out = append(out, n)
		} else if !errors.Is(err, stead.ErrNotFound) {
			h.Fatalf("Load(%s): %v", n, err)
		}
	}
	return out
}

func treeNames(nodes []treeNode) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.name
	}
	return out
}

func testTreePurge(h *harness) {
	h.seedTree(tree, base)
	res, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{})
	if err != nil {
		h.Fatalf("PurgeTree: %v", err)
	}
	if want := h.ids(treeMembers...); !slices.Equal(res.Members, want) || res.Deleted != len(want) {
		h.Fatalf("PurgeTree = %+v, want members %q, all deleted", res, want)
	}
	if left := h.present(treeNames(tree)...); !slices.Equal(left, []string{"tx", "t:stray", "other"}) {
		h.Fatalf("left after the purge: %q, want the bystanders alone", left)
	}
	for _, m := range append(treeMembers, "t:gone:0") {
		id := h.id(m)
		if h.processed(id, id+"-ev") || len(h.timers(id)) != 0 || len(h.trace(id)) != 0 || len(h.outboxByTarget()[id]) != 0 {
			h.Fatalf("rows of %s survived the purge", m)
		}
	}
	for _, s := range h.spawns("") {
		if slices.Contains(h.ids(treeMembers...), s.ParentID) {
			h.Fatalf("a spawn intent of %s survived the purge", s.ParentID)
		}
	}
	for _, b := range []string{"tx", "t:stray", "other"} {
		id := h.id(b)
		if !h.processed(id, id+"-ev") || len(h.timers(id)) != 1 || len(h.trace(id)) != 1 {
			h.Fatalf("the purge touched the rows of bystander %s", b)
		}
	}
	if _, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{}); !errors.Is(err, stead.ErrNotFound) {
		h.Fatalf("PurgeTree of a purged tree: %v, want ErrNotFound", err)
	}
}

// testTreeRefusesLiveMembers: a descendant that has not ended, or a failed root (which an
// operator can still retry), keeps the tree.
func testTreeRefusesLiveMembers(h *harness) {
	prefix := h.prefix
	cases := []struct {
		member int // index in tree
		status stead.Status
	}{
		{3, stead.StatusRunning}, // t:a:0:b:1, which only the prefix finds
		{3, stead.StatusSuspended},
		{3, stead.StatusCancelling},
		{3, stead.StatusPending},
		{0, stead.StatusFailed}, // the root
	}
	for _, c := range cases {
		nodes := slices.Clone(tree[:5])
		nodes[c.member].status = c.status
		h.prefix = fmt.Sprintf("%s%s-%d/", prefix, c.status, c.member) // a tree of its own per case
		h.seedTree(nodes, base)
		ids := h.ids(treeNames(nodes)...)
		before := h.snap(ids)
		_, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{})
		var se *stead.StatusError
		if !errors.As(err, &se) || se.ID != h.id(nodes[c.member].name) || se.Status != c.status || !errors.Is(err, stead.ErrInvalid) {
			h.Fatalf("PurgeTree with %s %s: %v, want a status error naming it", nodes[c.member].name, c.status, err)
		}
		h.unchanged("a refused tree purge", before, ids)
	}
}

// testTreeTakesFailedDescendant: a failed descendant (a region child whose failure its parent
// already took) does not keep a finished root's tree: the purge deletes it with the rest.
func testTreeTakesFailedDescendant(h *harness) {
	nodes := slices.Clone(tree[:5])
	nodes[1].status = stead.StatusFailed // t:a:0, with children of its own
	nodes[3].status = stead.StatusFailed // t:a:0:b:1, which only the prefix finds
	h.seedTree(nodes, base)
	res, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{})
	if err != nil {
		h.Fatalf("PurgeTree with failed descendants of a done root: %v", err)
	}
	if want := h.ids(treeMembers...); !slices.Equal(res.Members, want) || res.Deleted != len(want) {
		h.Fatalf("PurgeTree = %+v, want members %q, all deleted", res, want)
	}
	if left := h.present(treeMembers...); len(left) != 0 {
		h.Fatalf("left after the purge: %q", left)
	}
}

func testTreeRefusesChild(h *harness) {
	h.seedTree(tree[:5], base)
	ids := h.ids(treeMembers...)
	before := h.snap(ids)
	if _, err := retention.PurgeTree(h.ctx, h.s, h.id("t:a:0"), retention.Options{}); !errors.Is(err, stead.ErrInvalid) {
		h.Fatalf("PurgeTree of a child: %v, want ErrInvalid", err)
	}
	h.unchanged("a tree purge of a child", before, ids)
}

func testTreeArchiver(h *harness) {
	h.seedTree(tree, base)
	ids := h.ids(treeMembers...)
	var seen retention.Tree
	var storedDuring []string
	archive := func(ctx context.Context, t retention.Tree) error {
		seen = t
		storedDuring = h.present(treeMembers...)
		return nil
	}
	before := h.snap(ids)
	for _, veto := range []error{fmt.Errorf("legal hold: %w", retention.ErrVeto), errors.New("archive unreachable")} {
		_, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{Archive: func(context.Context, retention.Tree) error { return veto }})
		if !errors.Is(err, veto) {
			h.Fatalf("PurgeTree with an archiver failing %v: %v", veto, err)
		}
		h.unchanged("a vetoed tree purge", before, ids)
	}
	if _, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{Archive: archive}); err != nil {
		h.Fatalf("PurgeTree: %v", err)
	}
	if !slices.Equal(storedDuring, treeMembers) {
		h.Fatalf("while archiving, stored: %q; want the whole tree", storedDuring)
	}
	var got []string
	for _, e := range seen.Executions {
		got = append(got, e.ID)
	}
	if seen.Root != h.id("t") || !slices.Equal(got, ids) {
		h.Fatalf("the archiver saw root %q and %q, want the root first and the tree %q", seen.Root, got, ids)
	}
	for _, id := range ids {
		if tr := seen.Traces[id]; len(tr) != 1 || tr[0].EventKind != "Tick" {
			h.Fatalf("the archiver saw the trace of %s as %s", id, dump(tr))
		}
	}
	if left := h.present(treeMembers...); len(left) != 0 {
		h.Fatalf("left after the archived purge: %q", left)
	}
}

func testTreeDryRun(h *harness) {
	h.seedTree(tree, base)
	ids := h.ids(treeNames(tree)...)
	before := h.snap(ids)
	res, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{DryRun: true})
	if err != nil || res.Deleted != 0 || !slices.Equal(res.Members, h.ids(treeMembers...)) {
		h.Fatalf("dry run: %+v, %v", res, err)
	}
	h.unchanged("a dry run", before, ids)
}

// dyingBackend fails every Purge after the first n, as if the process purging died there.
type dyingBackend struct {
	stead.Backend
	left atomic.Int64
}

func (b *dyingBackend) Purge(ctx context.Context, id string, expected int64) (bool, error) {
	if b.left.Add(-1) < 0 {
		return false, fmt.Errorf("the purging process died: %w", stead.ErrUnavailable)
	}
	return b.Backend.Purge(ctx, id, expected)
}

func (b *dyingBackend) Close() error { return nil }

// testTreeResumes cuts a purge short after each number of deletions in turn, then runs it again
// on a healthy store: it finishes the tree, whatever was left.
func testTreeResumes(h *harness) {
	prefix := h.prefix
	for n := range len(treeMembers) {
		h.prefix = fmt.Sprintf("%s%d/", prefix, n) // a tree of its own per crash point
		h.seedTree(tree, base)
		d := &dyingBackend{Backend: h.s.Backend()}
		d.left.Store(int64(n))
		if _, err := retention.PurgeTree(h.ctx, stead.NewStore(d), h.id("t"), retention.Options{}); !errors.Is(err, stead.ErrUnavailable) {
			h.Fatalf("purge dying after %d deletions: %v", n, err)
		}
		if left := h.present("t"); len(left) != 1 {
			h.Fatalf("a purge cut short after %d deletions took the root", n)
		}
		if left := h.present(treeMembers...); len(left) != len(treeMembers)-n {
			h.Fatalf("after %d deletions %q are left", n, left)
		}
		res, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{})
		if err != nil || res.Deleted != len(treeMembers)-n {
			h.Fatalf("the purge run again after %d deletions: %+v, %v", n, res, err)
		}
		if left := h.present(treeNames(tree)...); !slices.Equal(left, []string{"tx", "t:stray", "other"}) {
			h.Fatalf("after the resumed purge: %q", left)
		}
	}
}

// testTreeRacingCommit commits to a member after the purge checked the tree (from the
// archiver): the purge must stop with ErrConflict, keep the root, and keep what the member
// committed.
func testTreeRacingCommit(h *harness) {
	exes := h.seedTree(tree, base)
	late := exes["t:a:0:b:0"] // the deepest: purged first
	_, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{Archive: func(context.Context, retention.Tree) error {
		h.commit(late, stead.Bundle{ProcessedEventID: "late-event"})
		return nil
	}})
	if !errors.Is(err, stead.ErrConflict) {
		h.Fatalf("PurgeTree racing a commit: %v, want ErrConflict", err)
	}
	if got := h.load(late.ID); got.Version != late.Version || !h.processed(late.ID, "late-event") {
		h.Fatalf("the member that committed lost its commit: version %d", got.Version)
	}
	if left := h.present("t"); len(left) != 1 {
		h.Fatal("the purge took the root after a conflict")
	}
	if _, err := retention.PurgeTree(h.ctx, h.s, h.id("t"), retention.Options{}); err != nil {
		h.Fatalf("the purge run again: %v", err)
	}
	if left := h.present(treeMembers...); len(left) != 0 {
		h.Fatalf("left after the purge run again: %q", left)
	}
}

// sweepSeed is the matrix of the sweep rules: roots finished at various times, with each status,
// and a done root of another definition.
var sweepSeed = []struct {
	name     string
	status   stead.Status
	finished time.Duration // after base; negative: not finished
	def      string
}{
	{"old-done", stead.StatusDone, 0, "def"},
	{"old-cancelled", stead.StatusCancelled, time.Minute, "def"},
	{"old-failed", stead.StatusFailed, 2 * time.Minute, "def"},
	{"old-other", stead.StatusDone, 3 * time.Minute, "other"},
	{"new-done", stead.StatusDone, 2 * time.Hour, "def"},
	{"running", stead.StatusRunning, -1, "def"},
}

func (h *harness) seedSweep() {
	for _, r := range sweepSeed {
		exe := h.newExe(r.name)
		exe.Status, exe.DeadLetter, exe.Children, exe.DefinitionID = r.status, nil, nil, h.id(r.def)
		if r.finished >= 0 {
			exe.FinishedAt = base.Add(r.finished)
		}
		h.commit(exe, purgeBundle(exe.ID, exe.ID))
		// Each old root has a finished child, which goes with it.
		child := h.newExe(r.name + ":c:0")
		child.Status, child.DeadLetter, child.Children, child.DefinitionID = stead.StatusDone, nil, nil, h.id(r.def)
		child.ParentID, child.FinishedAt = exe.ID, base
		h.commit(child, stead.Bundle{})
	}
}

// sweep runs a sweep. The rules scope theirs to their own definition, so that the subtests of
// one shared database do not sweep each other's roots.
func (h *harness) sweep(sw retention.Sweep) (retention.SweepReport, error) {
	h.Helper()
	return retention.PurgeFinished(h.ctx, h.s, sw)
}

func sweepNames() []string {
	var out []string
	for _, r := range sweepSeed {
		out = append(out, r.name, r.name+":c:0")
	}
	return out
}

func testSweepSelects(h *harness) {
	h.seedSweep()
	cutoff := base.Add(time.Hour)
	def := h.id("def")
	// Roots go in id order: old-cancelled, old-done, old-failed.
	rep, err := h.sweep(retention.Sweep{Before: cutoff, DefinitionID: def, Limit: 1})
	if err != nil || rep.Purged != 1 || rep.Deleted != 2 || len(rep.Refused) != 0 {
		h.Fatalf("sweep limited to one root: %+v, %v", rep, err)
	}
	if left := h.present("old-cancelled", "old-done"); !slices.Equal(left, []string{"old-done"}) {
		h.Fatalf("after a sweep of one: %q left", left)
	}
	rep, err = h.sweep(retention.Sweep{OlderThan: time.Hour, Now: func() time.Time { return base.Add(2 * time.Hour) },
		DefinitionID: def, Statuses: []stead.Status{stead.StatusDone}})
	if err != nil || rep.Purged != 1 || rep.Skipped != 1 || !rep.Cutoff.Equal(cutoff) {
		h.Fatalf("sweep of done roots: %+v, %v; want one purged and the failed one skipped", rep, err)
	}
	want := []string{"old-failed", "old-failed:c:0", "old-other", "old-other:c:0", "new-done", "new-done:c:0", "running", "running:c:0"}
	if left := h.present(sweepNames()...); !slices.Equal(left, want) {
		h.Fatalf("left after the sweeps: %q, want %q", left, want)
	}
	for name, sw := range map[string]retention.Sweep{
		"no cutoff":      {},
		"two cutoffs":    {Before: cutoff, OlderThan: time.Hour},
		"a failed sweep": {Before: cutoff, Statuses: []stead.Status{stead.StatusFailed}},
		"negative age":   {OlderThan: -time.Hour},
		"negative limit": {Before: cutoff, Limit: -1},
	} {
		if _, err := h.sweep(sw); !errors.Is(err, stead.ErrInvalid) {
			h.Fatalf("sweep with %s: %v, want ErrInvalid", name, err)
		}
	}
}

func testSweepDryRun(h *harness) {
	h.seedSweep()
	ids := h.ids(sweepNames()...)
	before := h.snap(ids)
	var archived []string
	rep, err := h.sweep(retention.Sweep{Before: base.Add(time.Hour), DefinitionID: h.id("def"), DryRun: true,
		Archive: func(_ context.Context, t retention.Tree) error { archived = append(archived, t.Root); return nil }})
	if err != nil || !rep.DryRun || rep.Purged != 2 || rep.Deleted != 4 || rep.Skipped != 1 {
		h.Fatalf("dry run: %+v, %v", rep, err)
	}
	if !slices.Equal(archived, h.ids("old-cancelled", "old-done")) {
		h.Fatalf("the dry run archived %q", archived)
	}
	h.unchanged("a dry-run sweep", before, ids)
}

func testSweepRefusals(h *harness) {
	h.seedSweep()
	// A live child under an old done root, and a root the archiver vetoes.
	live := h.newExe("old-done:c:1")
	live.Status, live.DeadLetter, live.Children, live.DefinitionID, live.ParentID = stead.StatusRunning, nil, nil, h.id("def"), h.id("old-done")
	h.commit(live, stead.Bundle{})
	held := h.id("old-cancelled")
	var pages int
	rep, err := h.sweep(retention.Sweep{Before: base.Add(time.Hour), DefinitionID: h.id("def"),
		Progress: func(retention.SweepReport) { pages++ },
		Archive: func(_ context.Context, t retention.Tree) error {
			if t.Root == held {
				return fmt.Errorf("legal hold: %w", retention.ErrVeto)
			}
			return nil
		}})
	if err != nil || rep.Purged != 0 || len(rep.Refused) != 2 || pages == 0 {
		h.Fatalf("sweep: %+v, %v; want both old roots refused", rep, err)
	}
	if rep.Refused[0].Root != held || !errors.Is(rep.Refused[0].Err, retention.ErrVeto) ||
		rep.Refused[1].Root != h.id("old-done") || !errors.As(rep.Refused[1].Err, new(*stead.StatusError)) {
		h.Fatalf("refusals %v", rep.Refused)
	}
	// Once the live child ends, a sweep goes on where the refusals were; an archiver that fails
	// (no veto) stops the sweep.
	live.Status, live.FinishedAt = stead.StatusCancelled, base
	h.commit(live, stead.Bundle{})
	stop := errors.New("archive unreachable")
	if _, err := h.sweep(retention.Sweep{Before: base.Add(time.Hour), DefinitionID: h.id("def"),
		Archive: func(context.Context, retention.Tree) error { return stop }}); !errors.Is(err, stop) {
		h.Fatalf("sweep with a failing archiver: %v, want it returned", err)
	}
	rep, err = h.sweep(retention.Sweep{Before: base.Add(time.Hour), DefinitionID: h.id("def")})
	if err != nil || rep.Purged != 2 || rep.Deleted != 5 {
		h.Fatalf("the sweep once the child ended: %+v, %v", rep, err)
	}
}
