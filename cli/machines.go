package cli

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/chart"
	"github.com/steadhq/stead/worker"
)

// MissingActionsError is what a command that runs a definition answers when the binary lacks
// some of the actions or guards the definition calls: the stock stead binary carries only the
// bundled samples' actions. It matches stead.ErrInvalid.
type MissingActionsError struct {
	// DefinitionID is the definition's versioned id; Source the file it came from, if any.
	DefinitionID, Source string
	// Actions and Guards are the names the binary's registry does not hold, sorted.
	Actions, Guards []string
}

func (e *MissingActionsError) Error() string {
	var what []string
	for _, a := range e.Actions {
		what = append(what, fmt.Sprintf("action %q", a))
	}
	for _, g := range e.Guards {
		what = append(what, fmt.Sprintf("guard %q", g))
	}
	verb := "is"
	if len(what) > 1 {
		verb = "are"
	}
	src := ""
	if e.Source != "" {
		src = " (" + e.Source + ")"
	}
	return fmt.Sprintf("definition %q%s: %s %s not registered in this binary: build your own stead with cli.Main and your actions, see README (\"Your own stead binary\")",
		e.DefinitionID, src, strings.Join(what, ", "), verb)
}

// Unwrap makes errors.Is(err, stead.ErrInvalid) true.
func (e *MissingActionsError) Unwrap() error { return stead.ErrInvalid }

// catalog is what a command loaded: every definition it can read, and a machine for each one
// whose actions the binary holds.
type catalog struct {
	defs     map[string]*chart.Definition // by versioned id
	machines worker.Machines              // the runnable ones
	missing  map[string]*MissingActionsError
}

// runnable returns the machines, or the first definition's missing actions when one of them
// cannot run: the commands that run every definition they load refuse then.
func (c *catalog) runnable() (worker.Machines, error) {
	if ids := slices.Sorted(maps.Keys(c.missing)); len(ids) > 0 {
		return nil, c.missing[ids[0]]
	}
	return c.machines, nil
}

// need returns nil when executions of definitionID can be run by this binary, and the reason
// when they cannot: its actions are missing, or it was not loaded at all.
func (c *catalog) need(definitionID string) error {
	if m := c.missing[definitionID]; m != nil {
		return m
	}
	if c.machines[definitionID] == nil {
		return fmt.Errorf("%w: definition %q is not loaded: give its file with --definition", stead.ErrInvalid, definitionID)
	}
	return nil
}

// load reads the definitions specs name (default: those compiled into the binary) and compiles
// each whose actions and guards the registry holds. A spec is a file path, or the id of a
// definition compiled into the binary.
func (a *app) load(specs []string, opts ...chart.Option) (*catalog, error) {
	type source struct {
		def  *chart.Definition
		from string
	}
	var srcs []source
	if len(specs) == 0 {
		for _, d := range a.cfg.Definitions {
			srcs = append(srcs, source{def: d})
		}
	}
	for _, s := range specs {
		def, from, err := a.definition(s)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, source{def, from})
	}
	reg := a.cfg.Registry
	if reg == nil {
		reg = chart.NewRegistry()
	}
	c := &catalog{defs: map[string]*chart.Definition{}, machines: worker.Machines{}, missing: map[string]*MissingActionsError{}}
	for _, s := range srcs {
		id := s.def.VersionedID()
		if _, dup := c.defs[id]; dup {
			return nil, usageError{fmt.Errorf("definition %q given twice", id)}
		}
		c.defs[id] = s.def
		name := s.from
		if name == "" {
			name = id
		}
		if m := missingNames(s.def, reg); m != nil {
			// The structure is still checked: a broken file is an error, not a chart to draw.
			if err := chart.Validate(s.def, nil); err != nil {
				return nil, fmt.Errorf("definition %s: %w", name, err)
			}
			m.DefinitionID, m.Source = id, s.from
			c.missing[id] = m
			continue
		}
		e, err := chart.NewEngine(s.def, reg, opts...)
		if err != nil {
			return nil, fmt.Errorf("definition %s: %w", name, err)
		}
		c.machines[id] = e
	}
	return c, nil
}

// definition reads one --definition: the id (or versioned id) of a definition compiled into the
// binary, or else a YAML file.
func (a *app) definition(spec string) (*chart.Definition, string, error) {
	looksLikeFile := strings.ContainsRune(spec, filepath.Separator) || strings.HasSuffix(spec, ".yaml") || strings.HasSuffix(spec, ".yml")
	if !looksLikeFile {
		for _, d := range a.cfg.Definitions {
			if d.ID == spec || d.VersionedID() == spec {
				return d, "", nil
			}
		}
		if _, err := os.Stat(spec); errors.Is(err, os.ErrNotExist) {
			return nil, "", usageError{fmt.Errorf("--definition %q: no such file, and no definition of that id is compiled into this binary (%s)",
				spec, a.builtinIDs())}
		}
	}
	def, err := chart.LoadFile(spec)
	if err != nil {
		return nil, "", fmt.Errorf("definition %s: %w", spec, err)
	}
	return def, spec, nil
}

func (a *app) builtinIDs() string {
	var ids []string
	for _, d := range a.cfg.Definitions {
		ids = append(ids, d.VersionedID())
	}
	if len(ids) == 0 {
		return "it has none"
	}
	return "it has " + strings.Join(ids, ", ")
}

// missingNames lists the actions and guards def calls that reg does not hold, or nil.
func missingNames(def *chart.Definition, reg *chart.Registry) *MissingActionsError {
	acts, guards := map[string]bool{}, map[string]bool{}
	addActs := func(names []string) {
		for _, n := range names {
			if n != "" && !reg.HasAction(n) {
				acts[n] = true
			}
		}
	}
	addTrans := func(ts ...*chart.Transition) {
		for _, t := range ts {
			if t == nil {
				continue
			}
			addActs(t.Actions)
			if t.Guard != "" && !reg.HasGuard(t.Guard) {
				guards[t.Guard] = true
			}
		}
	}
	for name := range def.Retry {
		addActs([]string{name})
	}
	def.Walk(func(_ string, s *chart.State) {
		addActs(s.Entry)
		addActs(s.Exit)
		addTrans(s.On...)
		addTrans(s.Done...)
		addTrans(s.Choice...)
		addTrans(s.OnError)
		if s.Timeout != nil {
			addTrans(&s.Timeout.Transition)
		}
		if s.Select != nil {
			if _, ok := reg.Labels(s.Select.Action); !ok && s.Select.Action != "" && !reg.HasAction(s.Select.Action) {
				acts[s.Select.Action] = true
			}
			for _, c := range s.Select.Cases {
				if c != nil {
					addTrans(&c.Transition)
				}
			}
		}
	})
	if len(acts) == 0 && len(guards) == 0 {
		return nil
	}
	return &MissingActionsError{Actions: slices.Sorted(maps.Keys(acts)), Guards: slices.Sorted(maps.Keys(guards))}
}

// handles reports whether some state of def takes events of kind: a transition on it, or a
// state that defers it.
func handles(def *chart.Definition, kind string) bool {
	found := false
	def.Walk(func(_ string, s *chart.State) {
		for _, t := range s.On {
			if t != nil && t.Event == kind {
				found = true
			}
		}
		if slices.Contains(s.Defer, kind) {
			found = true
		}
	})
	return found
}

// definitionHelp is the help of every --definition flag: it always names a definition to load.
const definitionHelp = "statechart definition: a YAML file, or the id of one compiled into this binary (repeatable; default: every one compiled in)"

// resolve is worker.Machines.Resolve over every definition read, runnable or not.
func (c *catalog) resolve(id string) string {
	all := worker.Machines{}
	for k := range c.defs {
		all[k] = c.machines[k]
	}
	return all.Resolve(id)
}

// explain replaces the worker's refusal of a command for want of a machine (a
// *worker.MachineError) with the reason this binary has: the definition's actions are missing,
// or its file was not given. Other errors, and any error when c is nil (a command that runs no
// definition), are returned as they are.
func (c *catalog) explain(err error) error {
	var me *worker.MachineError
	if c == nil || !errors.As(err, &me) {
		return err
	}
	if need := c.need(me.DefinitionID); need != nil {
		return need
	}
	return err
}
