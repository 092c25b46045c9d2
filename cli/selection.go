package cli

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/steadhq/stead"
)

// selectFlags select executions by listing filter, for the commands that act on many.
type selectFlags struct {
	definitionID string
	statuses     []string
	idPrefix     string
	withChildren bool
	windows      [6]string // created, updated, finished: from, before
	where        []string  // attribute conditions, stead.ParseAttributeFilter's syntax
}

var windowFlags = [6]string{"created-from", "created-before", "updated-from", "updated-before", "finished-from", "finished-before"}

func (f *selectFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.definitionID, "definition-id", "", "select executions of this definition id")
	fl.StringArrayVar(&f.statuses, "status", nil, "select these statuses (repeatable or comma-separated)")
	fl.StringVar(&f.idPrefix, "id-prefix", "", "select ids that start with this, byte for byte")
	registerWhere(fl, &f.where)
	fl.BoolVar(&f.withChildren, "include-children", false, "select child executions too (default: roots only; commands reach children through their parents)")
	for i, name := range windowFlags {
		what, bound, _ := strings.Cut(name, "-")
		help := fmt.Sprintf("select executions %s %s this time", what, map[string]string{"from": "at or after", "before": "before"}[bound])
		if what == "updated" {
			help = strings.Replace(help, "updated", "last updated", 1)
		}
		fl.StringVar(&f.windows[i], name, "", help+" (RFC 3339, a date, or an age such as 90m, 36h or 30d)")
	}
}

// set reports whether any selecting flag was given.
func (f *selectFlags) set() bool {
	if f.definitionID != "" || len(f.statuses) > 0 || f.idPrefix != "" || len(f.where) > 0 {
		return true
	}
	for _, w := range f.windows {
		if w != "" {
			return true
		}
	}
	return false
}

// filter is the listing filter the flags select, with ages counted back from now.
func (f *selectFlags) filter(now time.Time) (stead.ListFilter, error) {
	sel := stead.ListFilter{DefinitionID: f.definitionID, IDPrefix: f.idPrefix, RootsOnly: !f.withChildren}
	var err error
	if sel.Statuses, err = parseStatuses(f.statuses); err != nil {
		return sel, err
	}
	if sel.Attributes, err = parseWhere(f.where); err != nil {
		return sel, err
	}
	var t [6]time.Time
	for i, v := range f.windows {
		if v == "" {
			continue
		}
		if t[i], err = parseWhen(v, now); err != nil {
			return sel, usageError{fmt.Errorf("--%s %q: %w", windowFlags[i], v, err)}
		}
	}
	sel.Created = stead.TimeRange{From: t[0], Before: t[1]}
	sel.Updated = stead.TimeRange{From: t[2], Before: t[3]}
	sel.Finished = stead.TimeRange{From: t[4], Before: t[5]}
	return sel, nil
}

func parseStatuses(flags []string) ([]stead.Status, error) {
	var out []stead.Status
	for _, s := range flags {
		for _, p := range strings.Split(s, ",") {
			st := stead.Status(strings.TrimSpace(p))
			if !st.Valid() {
				return nil, usageError{fmt.Errorf("--status %q: want pending, running, done, failed, cancelling, cancelled or suspended", p)}
			}
			out = append(out, st)
		}
	}
	return out, nil
}

// parseWhen reads a point in time: RFC 3339, a date (midnight UTC), or an age before now (a Go
// duration, or a number of days such as 30d).
func parseWhen(s string, now time.Time) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	d, err := parseAge(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("want RFC 3339 (2026-01-02T15:04:05Z), a date (2026-01-02) or an age (36h, 30d)")
	}
	return now.Add(-d), nil
}

// parseAge reads a non-negative duration, with d for days.
func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a number of days", s)
		}
		return time.Duration(n * 24 * float64(time.Hour)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not an age", s)
	}
	return d, nil
}

// registerWhere adds the repeatable --where flag of the commands that filter by attributes.
func registerWhere(fl *pflag.FlagSet, where *[]string) {
	fl.StringArrayVar(where, "where", nil,
		"select executions whose attributes satisfy this condition (repeatable, all must hold): "+
			"customer=42, amount>100, due<2026-12-24T00:00:00Z, paid=true, tier in (gold, silver); a quoted value is a string")
}

// parseWhere parses the --where conditions; a malformed one is a usage error.
func parseWhere(where []string) ([]stead.AttrFilter, error) {
	var out []stead.AttrFilter
	for _, w := range where {
		f, err := stead.ParseAttributeFilter(w)
		if err != nil {
			return nil, usageError{fmt.Errorf("--where %q: %w", w, err)}
		}
		out = append(out, f)
	}
	return out, nil
}

// parseAttrs parses --attr key=value flags into attributes, the value typed as a --where
// condition's is (an integer, a time, a boolean, else a string; quoted: a string).
func parseAttrs(flags []string) (map[string]stead.AttrValue, error) {
	if len(flags) == 0 {
		return nil, nil
	}
	out := make(map[string]stead.AttrValue, len(flags))
	for _, a := range flags {
		f, err := stead.ParseAttributeFilter(a)
		if err != nil || f.Op != stead.AttrEq || len(f.Values) != 1 {
			return nil, usageError{fmt.Errorf("--attr %q: want key=value", a)}
		}
		out[f.Key] = f.Values[0]
	}
	return out, nil
}
