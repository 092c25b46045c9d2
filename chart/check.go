package chart

import (
	"fmt"
	"strings"

	"github.com/steadhq/stead"
)

// CheckExecution reports whether exe is a state this engine could have produced: it belongs to
// the definition, a running execution rests on a leaf (an atomic, final or parallel state)
// inside its root, a done one on a final state at its root with the matching outcome, history
// and invoke counters name states that can have them, and a parallel leaf has a join entry for
// each region. Operators use it to vet stored executions; the engine's own tests use it as the
// invariant every step keeps.
func (e *Engine) CheckExecution(exe *stead.Execution) error {
	if exe == nil {
		return fmt.Errorf("chart: %w: nil execution", stead.ErrInvalid)
	}
	if err := exe.Validate(); err != nil {
		return err
	}
	if exe.DefinitionID != e.id {
		return corrupt(exe, "definition %q, expected %q", exe.DefinitionID, e.id)
	}
	s := stepper{e: e, in: exe, out: exe, leaf: -1, root: -1}
	if err := s.locate(); err != nil {
		return err
	}
	switch exe.Status {
	case stead.StatusPending:
		if exe.ActivePath != "" {
			return corrupt(exe, "pending with active path %q", exe.ActivePath)
		}
	case stead.StatusRunning, stead.StatusSuspended, stead.StatusCancelling:
		if s.leaf < 0 {
			return corrupt(exe, "%s without an active path", exe.Status)
		}
		switch e.nodes[s.leaf].kind {
		case compoundNode:
			return corrupt(exe, "active path %q is not a leaf", exe.ActivePath)
		case choiceNode, selectNode:
			return corrupt(exe, "active path %q is a choice point or selector, which nothing rests in", exe.ActivePath)
		}
		if n := &e.nodes[s.leaf]; n.kind == parallelNode {
			seq := exe.InvokeSeq[n.path]
			for _, r := range n.children {
				if _, ok := exe.Children[s.childID(r, seq)]; !ok {
					return corrupt(exe, "parallel state %q has no join entry for region %q", n.path, e.nodes[r].path)
				}
			}
		}
	case stead.StatusDone:
		if exe.Outcome == OutcomeExpired && e.ttl > 0 {
			break // its time ran out wherever it was
		}
		n := &e.nodes[s.leaf]
		if n.kind != finalNode || n.parent != s.root {
			return corrupt(exe, "done on %q, which is not a final state of its root", exe.ActivePath)
		}
		if exe.Outcome != n.outcome {
			return corrupt(exe, "outcome %q, but final state %q declares %q", exe.Outcome, n.path, n.outcome)
		}
	}
	if len(exe.Deferred) > 0 && (exe.Status == stead.StatusDone || exe.Status == stead.StatusCancelled) {
		return corrupt(exe, "%s with deferred events", exe.Status)
	}
	if exe.Status.Finished() && exe.FinishedAt.IsZero() {
		return corrupt(exe, "%s without a finish time", exe.Status)
	}
	for k, v := range exe.History {
		c, p := e.byPath[v], e.byPath[k]
		if _, ok := e.byPath[k]; !ok || !e.nodes[p].history {
			return corrupt(exe, "history for %q, which is not a state with history", k)
		}
		if e.nodes[p].deep {
			if _, ok := e.byPath[v]; !ok || c == p || !e.isAncestor(p, c) || e.nodes[c].kind == compoundNode {
				return corrupt(exe, "deep history of %q names %q, which is not a leaf inside it", k, v)
			}
			continue
		}
		if _, ok := e.byPath[v]; !ok || e.nodes[c].parent != p {
			return corrupt(exe, "history of %q names %q, which is not its child", k, v)
		}
	}
	_, retrying := exe.Timers[RetryTimerPath]
	if retrying {
		switch {
		case exe.Status.Finished():
			return corrupt(exe, "%s with a pending retry", exe.Status)
		case len(exe.Deferred) == 0:
			return corrupt(exe, "a pending retry without the event it applies again")
		case exe.InvokeSeq[retryAttemptsKey] < 1:
			return corrupt(exe, "a pending retry without a count of failed attempts")
		}
	}
	if _, ok := exe.Timers[TTLTimerPath]; ok && (e.ttl <= 0 || exe.Status.Finished() || exe.RootPath != "") {
		return corrupt(exe, "a time-to-live timer on a %s execution of a definition without one", exe.Status)
	}
	for path := range exe.Timers {
		if path == RetryTimerPath || path == TTLTimerPath {
			continue
		}
		n, ok := e.byPath[path]
		if !ok || e.nodes[n].timeout == nil {
			return corrupt(exe, "timer for %q, which is not a state with a timeout", path)
		}
		active := false
		if !exe.Status.Finished() && exe.Status != stead.StatusPending {
			s.leaf = e.byPath[exe.ActivePath]
			active = s.isActive(n)
		}
		if !active {
			return corrupt(exe, "timer armed for %q, which is not active", path)
		}
	}
	if exe.Status == stead.StatusRunning || exe.Status == stead.StatusSuspended {
		if n := s.leaf; n >= 0 && e.nodes[n].inv != nil && e.nodes[n].inv.ForEach == "" {
			if _, ok := exe.Children[s.invokePrefix(n)]; !ok {
				return corrupt(exe, "invoking state %q has no join entry for its child", e.nodes[n].path)
			}
		}
	}
	for k, v := range exe.InvokeSeq {
		if k == retryAttemptsKey || k == retryVersionKey || k == retryIndexKey {
			if !retrying || v < 0 {
				return corrupt(exe, "retry counter %q=%d without a pending retry", k, v)
			}
			continue
		}
		if i, ok := e.byPath[k]; !ok || e.nodes[i].kind != parallelNode && e.nodes[i].inv == nil || v < 0 {
			return corrupt(exe, "invoke counter %q=%d is not a parallel or invoking state's", k, v)
		}
	}
	for id, c := range exe.Children {
		if c.RootPath == "" {
			n, ok := e.byPath[c.Key]
			if !ok || e.nodes[n].inv == nil || !strings.HasPrefix(id, exe.ID+":"+c.Key+":") {
				return corrupt(exe, "child %q of state %q is not one an invoking state starts", id, c.Key)
			}
			continue
		}
		r, ok := e.byPath[c.RootPath]
		if !ok || !e.nodes[r].region || !strings.HasPrefix(id, exe.ID+":"+c.RootPath+":") {
			return corrupt(exe, "child %q with root path %q is not one of its regions", id, c.RootPath)
		}
	}
	return nil
}
