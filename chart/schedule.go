package chart

import (
	"encoding/json"
	"slices"
	"time"
)

// Schedule declares a timetable that starts executions of the definition (package schedule
// stores and fires them; stead run applies a definition's declarations when it starts). In YAML:
//
//	schedules:
//	  sweep:                  # the schedule's id
//	    every: 5m             # or cron: "0 9 * * MON-FRI" with zone: Europe/Paris
//	    overlap: skip         # skip (default), buffer_one, allow_all, cancel_previous
//	    catch_up: latest      # latest (default), all, none
//	    window: 1h            # the catch-up window
//	    jitter: 10s
//	    context: {region: eu} # the context every execution it starts is created with
//
// A declaration is checked here for its form; the cron expression, the zone and the bounds are
// checked by package schedule when it is applied.
type Schedule struct {
	ID      string
	Cron    string
	Zone    string
	Every   time.Duration
	Jitter  time.Duration
	Overlap string
	CatchUp string
	Window  time.Duration
	Context json.RawMessage
	Pos     Pos
}

var (
	overlaps = []string{"", "skip", "buffer_one", "allow_all", "cancel_previous"}
	catchUps = []string{"", "latest", "all", "none"}
)

// checkSchedules reports what is wrong with the definition's schedule declarations.
func (v *validator) checkSchedules(scs []*Schedule) {
	seen := map[string]bool{}
	for _, sc := range scs {
		if !validKind(sc.ID) {
			v.addf(sc.Pos, "", "schedule id %q must be non-empty UTF-8 text without NUL bytes", sc.ID)
		}
		if seen[sc.ID] {
			v.addf(sc.Pos, "", "schedule %q is declared twice", sc.ID)
		}
		seen[sc.ID] = true
		if (sc.Cron == "") == (sc.Every == 0) {
			v.addf(sc.Pos, "", "schedule %q needs exactly one of cron and every", sc.ID)
		}
		if sc.Zone != "" && sc.Cron == "" {
			v.addf(sc.Pos, "", "schedule %q: zone applies to cron only", sc.ID)
		}
		if sc.Every < 0 || sc.Jitter < 0 || sc.Window < 0 {
			v.addf(sc.Pos, "", "schedule %q: durations must be positive", sc.ID)
		}
		if !slices.Contains(overlaps, sc.Overlap) {
			v.addf(sc.Pos, "", "schedule %q: overlap %q is not one of skip, buffer_one, allow_all, cancel_previous", sc.ID, sc.Overlap)
		}
		if !slices.Contains(catchUps, sc.CatchUp) {
			v.addf(sc.Pos, "", "schedule %q: catch_up %q is not one of latest, all, none", sc.ID, sc.CatchUp)
		}
		if len(sc.Context) > 0 {
			var obj map[string]json.RawMessage
			if json.Unmarshal(sc.Context, &obj) != nil {
				v.addf(sc.Pos, "", "schedule %q: context must be a mapping", sc.ID)
			}
		}
	}
}
