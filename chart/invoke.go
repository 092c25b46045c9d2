package chart

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/steadhq/stead"
)

// invokeRootPrefix marks a spawn intent whose child runs another definition: its root path is
// the prefix and the definition id, since a child of a whole machine has no root path of its own.
const invokeRootPrefix = "@invoke:"

// SpawnTarget says what a spawn intent of an execution of definition parentDef creates: a region
// child runs parentDef from rootPath; an invoked child runs another definition from its top
// (rootPath empty). The worker creates children with it.
func SpawnTarget(parentDef, spawnRootPath string) (definitionID, rootPath string) {
	if id, ok := strings.CutPrefix(spawnRootPath, invokeRootPrefix); ok {
		return id, ""
	}
	return parentDef, spawnRootPath
}

// invokePrefix is the id prefix of the children of the current entry of invoking state n.
func (s *stepper) invokePrefix(n int32) string {
	nd := &s.e.nodes[n]
	return s.in.ID + ":" + nd.path + ":" + strconv.Itoa(s.out.InvokeSeq[nd.path])
}

// invoke starts the child (or, for a fan-out, the children) of invoking state n.
func (s *stepper) invoke(n int32) error {
	nd := &s.e.nodes[n]
	inv := nd.inv
	c := s.context()
	if err := c.decode(); err != nil {
		return err // corrupt: finishStep reports it
	}
	base := map[string]json.RawMessage{}
	for _, k := range slices.Sorted(maps.Keys(inv.Input)) {
		if v, ok := c.m[inv.Input[k]]; ok {
			base[k] = v
		}
	}
	fail := func(format string, args ...any) error {
		return &actionError{owner: n, action: "invoke " + inv.Definition, err: fmt.Errorf(format, args...)}
	}
	prefix := s.invokePrefix(n)
	root := invokeRootPrefix + inv.Definition
	children := map[string]stead.ChildState{}
	if inv.ForEach == "" {
		raw, err := json.Marshal(base)
		if err != nil {
			return fail("input: %v", err)
		}
		children[prefix] = stead.ChildState{Key: nd.path}
		s.b.Spawns = append(s.b.Spawns, stead.Spawn{ChildID: prefix, RootPath: root, Context: raw})
		s.out.Children, s.ownChild = children, true
		return nil
	}
	var items []json.RawMessage
	raw, ok := c.m[inv.ForEach]
	if !ok {
		return fail("context key %q to fan out over is missing", inv.ForEach)
	}
	if err := json.Unmarshal(raw, &items); err != nil || items == nil && string(raw) != "[]" {
		return fail("context key %q to fan out over is not a list", inv.ForEach)
	}
	if len(items) > MaxFanOut {
		return fail("context key %q holds %d items, more than %d", inv.ForEach, len(items), MaxFanOut)
	}
	for i, item := range items {
		ctx := maps.Clone(base)
		ctx[inv.As] = item
		ctx["index"] = json.RawMessage(strconv.Itoa(i))
		raw, err := json.Marshal(ctx)
		if err != nil {
			return fail("item %d: %v", i, err)
		}
		id := prefix + ":" + strconv.Itoa(i)
		children[id] = stead.ChildState{Key: nd.path}
		s.b.Spawns = append(s.b.Spawns, stead.Spawn{ChildID: id, RootPath: root, Context: raw})
	}
	s.out.Children, s.ownChild = children, true
	if len(items) == 0 {
		if err := c.set(inv.Results, json.RawMessage("[]")); err != nil {
			return err
		}
		s.emptyFanOut = true
	}
	return nil
}

// invokedIndex returns the item index of a fan-out child id, or -1.
func invokedIndex(prefix, id string) int {
	rest, ok := strings.CutPrefix(id, prefix+":")
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(rest)
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// invokeChildren returns the ids of the current entry's children of invoking state n, in item
// order (one id for a single child).
func (s *stepper) invokeChildren(n int32) []string {
	prefix := s.invokePrefix(n)
	if s.e.nodes[n].inv.ForEach == "" {
		if _, ok := s.out.Children[prefix]; ok {
			return []string{prefix}
		}
		return nil
	}
	ids := make([]string, 0, len(s.out.Children))
	for id := range s.out.Children {
		if invokedIndex(prefix, id) >= 0 {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int { return invokedIndex(prefix, a) - invokedIndex(prefix, b) })
	return ids
}

// cancelInvoked cancels the unfinished children of invoking state n, in item order.
func (s *stepper) cancelInvoked(n int32) {
	for _, id := range s.invokeChildren(n) {
		s.cancelChild(id)
	}
}

// invokeFinished records that a child of invoking state p finished and, once the join is
// complete, takes the state's completion transition.
func (s *stepper) invokeFinished(p int32, d finishedData) error {
	nd := &s.e.nodes[p]
	prefix := s.invokePrefix(p)
	cs, ok := s.out.Children[d.ChildID]
	mine := d.ChildID == prefix && nd.inv.ForEach == "" || nd.inv.ForEach != "" && invokedIndex(prefix, d.ChildID) >= 0
	if !ok || cs.Finished || !mine {
		return nil // a late notice of a child of an earlier entry, or one already cancelled
	}
	cs.Finished, cs.Outcome, cs.Result = true, d.Outcome, d.Result
	s.children()[d.ChildID] = cs
	c := s.context()
	if nd.inv.ForEach == "" {
		if len(d.Result) > 0 && string(d.Result) != "null" {
			if err := c.merge(d.Result); err != nil {
				return fmt.Errorf("chart: %w: finished event %q: result is not a JSON object: %v", stead.ErrInvalid, s.ev.ID, err)
			}
		}
		s.join(p, d.Outcome)
		return nil
	}
	ids := s.invokeChildren(p)
	outcome := ""
	if nd.inv.FailFast && d.Outcome != OutcomeSuccess {
		outcome = d.Outcome
		s.cancelInvoked(p)
	}
	results := make([]json.RawMessage, len(ids))
	for i, id := range ids {
		c := s.out.Children[id]
		if !c.Finished {
			return nil // the join waits for this child
		}
		if outcome == "" && c.Outcome != OutcomeSuccess {
			outcome = c.Outcome
		}
		results[i] = json.RawMessage("null")
		if len(c.Result) > 0 && c.Outcome != OutcomeCancelled {
			results[i] = c.Result
		}
	}
	if outcome == "" {
		outcome = OutcomeSuccess
	}
	raw, err := json.Marshal(results)
	if err != nil {
		return fmt.Errorf("chart: %w: finished event %q: a result is not JSON: %v", stead.ErrInvalid, s.ev.ID, err)
	}
	if err := c.set(nd.inv.Results, raw); err != nil {
		return nil // reported as fatal by finishStep
	}
	s.join(p, outcome)
	return nil
}

// join takes state p's completion transition for outcome.
func (s *stepper) join(p int32, outcome string) {
	t, ev, err := s.pickDone(p, outcome)
	if err != nil {
		s.drive(nil, stead.Event{}, err)
	} else if t != nil {
		s.drive(t, ev, nil)
	}
}

// returned is the part of the context an invoked execution hands back: its definition's
// Returns keys, as a JSON object, or nil when it returns nothing.
func (s *stepper) returned() json.RawMessage {
	if len(s.e.returns) == 0 {
		return nil
	}
	c := s.context()
	if c.decode() != nil {
		return nil
	}
	out := make(map[string]json.RawMessage, len(s.e.returns))
	for _, k := range s.e.returns {
		if v, ok := c.m[k]; ok {
			out[k] = v
		}
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil
	}
	return raw
}
