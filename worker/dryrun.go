package worker

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/internal/check"
)

// MachineError is the refusal of a command that needs the execution's machine (reset, set-state
// and retry follow the definition) when the client has none for it, or has one that does not
// apply commands. It matches stead.ErrInvalid; check for it with errors.As.
type MachineError struct {
	Op           Op
	ExecutionID  string
	DefinitionID string
	// NotController is true when there is a machine but it is not a Controller.
	NotController bool
}

func (e *MachineError) Error() string {
	if e.NotController {
		return fmt.Sprintf("worker: %s %q: the machine of definition %q does not apply %s (it is not a worker.Controller)",
			e.Op, e.ExecutionID, e.DefinitionID, e.Op)
	}
	return fmt.Sprintf("worker: %s %q: this client has no machine for definition %q: add it to Client.Known (a binary that runs it, with its actions)",
		e.Op, e.ExecutionID, e.DefinitionID)
}

// Unwrap makes errors.Is(err, stead.ErrInvalid) true.
func (e *MachineError) Unwrap() error { return stead.ErrInvalid }

// checkCommand is everything that can refuse the control event ev of op on exe before it is
// computed: the status, the machine the command needs, and what the definition says of the
// command's data. Both the real command and its dry run go through it, so that a dry run
// refuses exactly what the command would.
func checkCommand(exe *stead.Execution, op Op, ev stead.Event, m Machine) (Controller, error) {
	if err := admitCommand(exe, op); err != nil {
		return nil, err
	}
	switch op {
	case OpReset, OpSetState, OpRetry:
	default:
		return nil, nil
	}
	if m == nil {
		return nil, &MachineError{Op: op, ExecutionID: exe.ID, DefinitionID: exe.DefinitionID}
	}
	c, ok := m.(Controller)
	if !ok {
		return nil, &MachineError{Op: op, ExecutionID: exe.ID, DefinitionID: exe.DefinitionID, NotController: true}
	}
	e, ok := m.(*chart.Engine)
	if !ok {
		return c, nil // another Controller: its own Control is the only judge
	}
	// The engine computes a command by running actions, which may have side effects, so a dry
	// run cannot ask it; these are the engine's own refusals, read from its definition.
	def := e.Definition()
	switch op {
	case OpSetState:
		if err := checkSetState(exe, def, ev); err != nil {
			return nil, err
		}
	case OpRetry:
		if err := checkRetry(exe, def); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// checkSetState refuses a set-state to a state the execution cannot rest in: one the definition
// lacks, the region a region child runs or one outside it, or one inside the regions of a
// parallel state (those run as child executions).
func checkSetState(exe *stead.Execution, def *chart.Definition, ev stead.Event) error {
	state, err := setStateTarget(ev)
	if err != nil {
		return err
	}
	if def.State(state) == nil {
		return check.Invalidf("set-state %q: definition %q has no state %q", exe.ID, exe.DefinitionID, state)
	}
	if state == exe.RootPath {
		return check.Invalidf("set-state %q: %q is the region the execution runs, not a state inside it", exe.ID, state)
	}
	if exe.RootPath != "" && !strings.HasPrefix(state, exe.RootPath+".") {
		return check.Invalidf("set-state %q: %q is outside the region %q the execution runs", exe.ID, state, exe.RootPath)
	}
	// Every state between the execution's root and the target must not be parallel.
	for p := parentPath(state); p != exe.RootPath && p != ""; p = parentPath(p) {
		if s := def.State(p); s != nil && s.Parallel {
			return check.Invalidf("set-state %q: %q is inside a region of parallel state %q, which runs as a child execution",
				exe.ID, state, p)
		}
	}
	return nil
}

// checkRetry refuses a retry the engine cannot apply: no dead letter, a region child (its
// failure went to its parent), or a failure in a state whose children were cancelled with it.
func checkRetry(exe *stead.Execution, def *chart.Definition) error {
	if exe.DeadLetter == nil {
		return check.Invalidf("retry %q: it keeps no dead letter to apply again", exe.ID)
	}
	if exe.ParentID != "" {
		return check.Invalidf("retry %q: a child's failure was reported to its parent %q; reset or set-state the parent",
			exe.ID, exe.ParentID)
	}
	if s := def.State(exe.DeadLetter.ActivePath); s != nil && (s.Parallel || s.Invoke != nil) {
		return check.Invalidf("retry %q: it failed in state %q, whose children were cancelled; reset or set-state it",
			exe.ID, exe.DeadLetter.ActivePath)
	}
	return nil
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '.'); i >= 0 {
		return p[:i]
	}
	return ""
}

// setStateTarget is the state a set-state event names.
func setStateTarget(ev stead.Event) (string, error) {
	var d struct {
		State string `json:"state"`
	}
	if err := json.Unmarshal(ev.Data, &d); err != nil || d.State == "" {
		return "", check.Invalidf("set-state: data is not {\"state\": \"<path>\"}")
	}
	return d.State, nil
}
