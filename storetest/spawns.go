package storetest

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/steadhq/stead"
)

var spawnRules = []rule{
	{name: "order_and_fields", run: testSpawnOrder},
	{name: "ack_removes_exactly_the_acked", run: testSpawnAck},
	{name: "claims_are_exclusive", run: testSpawnClaimsExclusive},
	{name: "claims_come_back_after_lease_expiry", run: testSpawnLeaseExpiry},
	{name: "trace_context_round_trips", run: testSpawnTrace},
}

// testSpawnTrace holds a backend to keep a spawn intent's W3C trace context byte for byte,
// through Commit and CommitBatch, in what PendingSpawns and ClaimSpawns return: a relay that
// creates the child after a crash gives its start event that context, so that the child joins
// its parent's trace.
func testSpawnTrace(h *harness) {
	const tc = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01;congo=t61rcWkgMzE"
	one, two := h.newExe("tracing-one"), h.newExe("tracing-two")
	h.commit(one, stead.Bundle{Spawns: []stead.Spawn{
		{ChildID: one.ID + ":inv:0", Trace: tc}, {ChildID: one.ID + ":inv:1", RootPath: "main/r"},
	}})
	res, err := h.s.CommitBatch(h.ctx, []stead.CommitItem{{Execution: two, Bundle: stead.Bundle{
		Spawns: []stead.Spawn{{ChildID: two.ID + ":par:0", RootPath: "main/par/a", Context: json.RawMessage(`{"a":1}`), Trace: tc[:55]}}}}})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		h.Fatalf("CommitBatch: %v %+v", err, res)
	}
	got := h.spawns("")
	seqs := spawnSeqs(got)
	if len(got) != 3 {
		h.Fatalf("PendingSpawns = %s, want 3", dump(got))
	}
	want := []stead.SpawnEntry{
		{Seq: seqs[0], ParentID: one.ID, ChildID: one.ID + ":inv:0", Trace: tc},
		{Seq: seqs[1], ParentID: one.ID, ChildID: one.ID + ":inv:1", RootPath: "main/r"},
		{Seq: seqs[2], ParentID: two.ID, ChildID: two.ID + ":par:0", RootPath: "main/par/a", Context: []byte(`{"a":1}`), Trace: tc[:55]},
	}
	h.wantSpawns("PendingSpawns", got, want)
	claimed, err := h.s.ClaimSpawns(h.ctx, base, 10*time.Second, 10)
	if err != nil {
		h.Fatalf("ClaimSpawns: %v", err)
	}
	h.wantSpawns("ClaimSpawns", claimed, want)
}

func (h *harness) wantSpawns(what string, got, want []stead.SpawnEntry) {
	h.Helper()
	g, w := mapSlice(got, normSpawn), mapSlice(want, normSpawn)
	if len(g) == 0 && len(w) == 0 {
		return
	}
	if dump(g) != dump(w) {
		h.Fatalf("%s: spawns\n got %s\nwant %s", what, dump(g), dump(w))
	}
}

func testSpawnOrder(h *harness) {
	parent, other := h.newExe("parent"), h.newExe("other")
	h.commit(parent, stead.Bundle{Spawns: []stead.Spawn{
		{ChildID: parent.ID + ":par:0", RootPath: "main/par/a", Context: json.RawMessage(`{"region": "a", "n": [1, 2]}`)},
		{ChildID: parent.ID + ":par:1", RootPath: "main/par/b"},
	}})
	h.commit(other, stead.Bundle{Spawns: []stead.Spawn{{ChildID: other.ID + ":inv:0", RootPath: ""}}})
	h.commit(parent, stead.Bundle{Spawns: []stead.Spawn{{ChildID: parent.ID + ":par:2", RootPath: "main/par/c", Context: json.RawMessage(`{}`)}}})

	got := h.spawns(parent.ID)
	seqs := spawnSeqs(got)
	if len(got) != 3 || !increasing(seqs) {
		h.Fatalf("PendingSpawns(parent) = %s, want 3 in seq order", dump(got))
	}
	want := []stead.SpawnEntry{
		{Seq: seqs[0], ParentID: parent.ID, ChildID: parent.ID + ":par:0", RootPath: "main/par/a", Context: []byte(`{"region":"a","n":[1,2]}`)},
		{Seq: seqs[1], ParentID: parent.ID, ChildID: parent.ID + ":par:1", RootPath: "main/par/b"},
		{Seq: seqs[2], ParentID: parent.ID, ChildID: parent.ID + ":par:2", RootPath: "main/par/c", Context: []byte(`{}`)},
	}
	h.wantSpawns("PendingSpawns(parent)", got, want)
	all := h.spawns("")
	if len(all) != 4 || !increasing(spawnSeqs(all)) {
		h.Fatalf("PendingSpawns(all) = %s, want 4 in seq order", dump(all))
	}
	if all[2].ParentID != other.ID || all[2].ChildID != other.ID+":inv:0" {
		h.Fatalf("PendingSpawns(all)[2] = %s, want other's spawn between the parent's", dump(all[2]))
	}
	lim, err := h.s.PendingSpawns(h.ctx, parent.ID, 2)
	if err != nil || !slices.Equal(spawnSeqs(lim), seqs[:2]) {
		h.Fatalf("PendingSpawns(parent, 2) = %s, %v; want the first two", dump(lim), err)
	}
}

func (h *harness) seedSpawns(n int) []int64 {
	var all []int64
	for p := range 4 {
		exe := h.newExe(fmt.Sprintf("parent-%d", p))
		var sp []stead.Spawn
		for i := range n / 4 {
			sp = append(sp, stead.Spawn{ChildID: fmt.Sprintf("%s:r:%d", exe.ID, i), RootPath: "main/r"})
		}
		h.commit(exe, stead.Bundle{Spawns: sp})
		all = append(all, spawnSeqs(h.spawns(exe.ID))...)
	}
	slices.Sort(all)
	return all
}

func testSpawnAck(h *harness) {
	seqs := h.seedSpawns(8)
	if err := h.s.AckSpawns(h.ctx, []int64{seqs[3]}); err != nil {
		h.Fatalf("AckSpawns: %v", err)
	}
	want := slices.Delete(slices.Clone(seqs), 3, 4)
	if got := spawnSeqs(h.spawns("")); !slices.Equal(got, want) {
		h.Fatalf("after acking one: %v, want %v", got, want)
	}
	if err := h.s.AckSpawns(h.ctx, []int64{seqs[0], seqs[3], seqs[7], seqs[7] + 1_000_000}); err != nil {
		h.Fatalf("batched AckSpawns: %v", err)
	}
	want = []int64{seqs[1], seqs[2], seqs[4], seqs[5], seqs[6]}
	if got := spawnSeqs(h.spawns("")); !slices.Equal(got, want) {
		h.Fatalf("after a batched ack: %v, want %v", got, want)
	}
	if err := h.s.AckSpawns(h.ctx, want); err != nil {
		h.Fatalf("AckSpawns: %v", err)
	}
	if got := h.spawns(""); len(got) != 0 {
		h.Fatalf("after acking every spawn: %s", dump(got))
	}
	// Spawn seqs are never reused either.
	exe := h.newExe("late")
	h.commit(exe, stead.Bundle{Spawns: []stead.Spawn{{ChildID: exe.ID + ":0"}}})
	if got := spawnSeqs(h.spawns(exe.ID)); len(got) != 1 || got[0] <= seqs[7] {
		h.Fatalf("a spawn after acking all got seq %v, want one above %d", got, seqs[7])
	}
}

func testSpawnClaimsExclusive(h *harness) {
	seqs := h.seedSpawns(200)
	claim := func(now time.Time, lease time.Duration, limit int) ([]stead.SpawnEntry, error) {
		return h.s.ClaimSpawns(h.ctx, now, lease, limit)
	}
	got := claimAll(h, claim, func(e stead.SpawnEntry) int64 { return e.Seq }, base, len(seqs))
	h.wantSameSet("concurrent ClaimSpawns", got, seqs)
	if n := len(h.spawns("")); n != len(seqs) {
		h.Fatalf("PendingSpawns shows %d rows while claimed, want %d", n, len(seqs))
	}
}

func testSpawnLeaseExpiry(h *harness) {
	seqs := h.seedSpawns(12)
	const lease = 10 * time.Second
	claim := func(now time.Time, limit int) []int64 {
		h.Helper()
		es, err := h.s.ClaimSpawns(h.ctx, now, lease, limit)
		if err != nil {
			h.Fatalf("ClaimSpawns(%v): %v", now, err)
		}
		for _, e := range es {
			if e.ParentID == "" || e.ChildID == "" || e.RootPath != "main/r" {
				h.Fatalf("claimed spawn lacks its fields: %s", dump(e))
			}
		}
		return spawnSeqs(es)
	}
	if got := claim(base, 4); !slices.Equal(got, seqs[:4]) {
		h.Fatalf("first claim = %v, want %v", got, seqs[:4])
	}
	if got := claim(base.Add(time.Second), 100); !slices.Equal(got, seqs[4:]) {
		h.Fatalf("claim under a live lease = %v, want %v", got, seqs[4:])
	}
	if got := claim(base.Add(lease-time.Microsecond), 100); len(got) != 0 {
		h.Fatalf("claim before any lease ends = %v", got)
	}
	if got := claim(base.Add(lease), 100); !slices.Equal(got, seqs[:4]) {
		h.Fatalf("claim when the first lease ends = %v, want %v", got, seqs[:4])
	}
	if err := h.s.AckSpawns(h.ctx, seqs[2:6]); err != nil {
		h.Fatalf("AckSpawns: %v", err)
	}
	want := append(slices.Clone(seqs[:2]), seqs[6:]...)
	if got := claim(base.Add(10*lease), 100); !slices.Equal(got, want) {
		h.Fatalf("claim after every lease expired = %v, want %v", got, want)
	}
}
