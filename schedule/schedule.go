package schedule

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strings"
	"time"
	// Embedded so that a time zone resolves the same on a host without a zoneinfo database
	// (a scratch container): every process of a fleet must compute the same ticks.
	_ "time/tzdata"

	"github.com/robfig/cron/v3"
	"github.com/steadhq/stead/internal/check"
)

// Overlap says what a tick does while the execution the previous tick started has not finished.
type Overlap string

const (
	// Skip drops the tick (the default).
	Skip Overlap = "skip"
	// BufferOne holds the tick until the previous execution finishes, then starts it; ticks due
	// meanwhile are folded into that one.
	BufferOne Overlap = "buffer_one"
	// AllowAll starts the tick's execution regardless.
	AllowAll Overlap = "allow_all"
	// CancelPrevious cancels the previous execution, then starts the tick's.
	CancelPrevious Overlap = "cancel_previous"
)

// CatchUp says which of the ticks missed while no runner ran are started.
type CatchUp string

const (
	// Latest starts the latest missed tick once, however old (the default).
	Latest CatchUp = "latest"
	// All starts every missed tick within the catch-up window, oldest first.
	All CatchUp = "all"
	// None starts no tick older than the catch-up window.
	None CatchUp = "none"
)

// DefaultCatchUpWindow is the catch-up window of a schedule that sets none.
const DefaultCatchUpWindow = time.Minute

// MaxIDLen bounds a schedule id, so that the execution id made from it and a tick time
// (ExecutionID) stays within the store's bound on ids.
const MaxIDLen = check.MaxIDLen - 64

// MaxContext bounds a schedule's context template in bytes: it is copied into every execution
// and read on every tick.
const MaxContext = 64 << 10

// MinEvery is the shortest interval: a tick every store round-trip is no schedule.
const MinEvery = 100 * time.Millisecond

// Schedule starts executions of a definition on a cron expression or a fixed interval.
type Schedule struct {
	ID           string
	DefinitionID string
	// Context is the context every execution the schedule starts is created with (a JSON
	// object, or nil).
	Context json.RawMessage
	// Cron is a cron expression of 5 fields (minute to day of week) or 6 (seconds first), or a
	// descriptor such as @daily, read in TimeZone. Exactly one of Cron and Every is set.
	Cron string
	// TimeZone is the IANA zone Cron is read in (default UTC).
	TimeZone string
	// Every is a fixed interval: ticks fall on the multiples of Every since the Unix epoch, so
	// that every process computes the same ones. Whole microseconds, at least MinEvery.
	Every time.Duration
	// Jitter, when set, delays each tick's start by a pseudo-random share of it, the same in
	// every process (it is drawn from the schedule id and the tick). Shorter than the period.
	Jitter        time.Duration
	Overlap       Overlap       // default Skip
	CatchUp       CatchUp       // default Latest
	CatchUpWindow time.Duration // default DefaultCatchUpWindow
	Paused        bool

	// Kept by the store: callers' values are ignored by Create.

	// NextTick is the next tick not yet fired or dropped.
	NextTick time.Time
	// LastTick is the latest tick that started an execution, and LastExecutionID its execution.
	LastTick        time.Time
	LastExecutionID string
	// Version grows with every write; Update compares it.
	Version   int64
	CreatedAt time.Time
	UpdatedAt time.Time
}

// ExecutionID is the id of the execution the schedule's tick at t starts: the same in every
// process, so that a tick replayed by another runner finds its execution there and creates
// nothing (ErrAlreadyExists).
func ExecutionID(scheduleID string, tick time.Time) string {
	return scheduleID + "@" + tick.UTC().Format(time.RFC3339Nano)
}

var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// spec is a schedule's parsed timing.
type spec struct {
	cron  *cron.SpecSchedule
	every time.Duration
}

func parseSpec(s *Schedule) (spec, error) {
	switch {
	case s.Cron != "" && s.Every != 0:
		return spec{}, check.Invalidf("schedule %q sets both a cron expression and an interval", s.ID)
	case s.Every != 0:
		if s.TimeZone != "" && s.TimeZone != "UTC" {
			return spec{}, check.Invalidf("schedule %q: a time zone applies to a cron expression, not an interval", s.ID)
		}
		if s.Every < MinEvery || s.Every%time.Microsecond != 0 {
			return spec{}, check.Invalidf("schedule %q: interval %v: want whole microseconds, at least %v", s.ID, s.Every, MinEvery)
		}
		return spec{every: s.Every}, nil
	case s.Cron == "":
		return spec{}, check.Invalidf("schedule %q has neither a cron expression nor an interval", s.ID)
	}
	if err := check.Text("cron expression", s.Cron); err != nil {
		return spec{}, err
	}
	// The zone is the TimeZone field's alone: a prefix would give a schedule two.
	if t := strings.TrimSpace(s.Cron); strings.HasPrefix(t, "TZ=") || strings.HasPrefix(t, "CRON_TZ=") {
		return spec{}, check.Invalidf("schedule %q: give the time zone in TimeZone, not in the cron expression", s.ID)
	}
	loc := time.UTC
	if s.TimeZone != "" {
		if err := check.Text("time zone", s.TimeZone); err != nil {
			return spec{}, err
		}
		l, err := time.LoadLocation(s.TimeZone)
		if err != nil || s.TimeZone == "Local" {
			return spec{}, check.Invalidf("schedule %q: unknown time zone %q", s.ID, s.TimeZone)
		}
		loc = l
	}
	parsed, err := parser.Parse(s.Cron)
	if err != nil {
		return spec{}, check.Invalidf("schedule %q: cron expression %q: %v", s.ID, s.Cron, err)
	}
	sp, ok := parsed.(*cron.SpecSchedule)
	if !ok { // @every: its ticks hang on the time of parsing, which no two processes share
		return spec{}, check.Invalidf("schedule %q: cron expression %q: use an interval (Every) instead of @every", s.ID, s.Cron)
	}
	sp.Location = loc // the parser's default is the host's zone
	return spec{cron: sp}, nil
}

// next returns the first tick strictly after t, or the zero time if there is none (a cron
// expression no date matches).
func (sp spec) next(t time.Time) time.Time {
	if sp.every > 0 {
		d := sp.every.Microseconds()
		us := t.UnixMicro()
		n := us - us%d
		if us < 0 && us%d != 0 {
			n -= d
		}
		return time.UnixMicro(n + d).UTC()
	}
	n := sp.cron.Next(t)
	if n.IsZero() {
		return n
	}
	return n.UTC()
}

// latest returns the last tick in [from, to], or the zero time when there is none. It looks
// back from to in widening spans, so that it costs a few calls of next even after a long
// downtime of a schedule that ticks every second.
func (sp spec) latest(from, to time.Time) time.Time {
	span := time.Second
	for {
		lo := to.Add(-span)
		if lo.Before(from) {
			lo = from
		}
		t := sp.next(lo.Add(-time.Microsecond))
		if !t.IsZero() && !t.After(to) {
			for {
				n := sp.next(t)
				if n.IsZero() || n.After(to) {
					return t
				}
				t = n
			}
		}
		if !lo.After(from) {
			return time.Time{}
		}
		span *= 4
	}
}

// jitter returns the delay of tick: the same in every process.
func (s *Schedule) jitter(tick time.Time) time.Duration {
	if s.Jitter <= 0 {
		return 0
	}
	h := fnv.New64a()
	h.Write([]byte(s.ID))
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(tick.UnixMicro()))
	h.Write(b[:])
	return time.Duration(h.Sum64()%uint64(s.Jitter.Microseconds()+1)) * time.Microsecond
}

// Next returns the first tick of s strictly after t (the zero time if there is none).
func (s *Schedule) Next(t time.Time) (time.Time, error) {
	sp, err := parseSpec(s)
	if err != nil {
		return time.Time{}, err
	}
	return sp.next(t), nil
}

// validate checks s and fills in its defaults; it returns its parsed timing.
func (s *Schedule) validate() (spec, error) {
	if err := check.ID("schedule id", s.ID); err != nil {
		return spec{}, err
	}
	if len(s.ID) > MaxIDLen {
		return spec{}, check.Invalidf("schedule id is %d bytes, more than %d", len(s.ID), MaxIDLen)
	}
	if err := check.ID("definition id", s.DefinitionID); err != nil {
		return spec{}, err
	}
	if len(s.Context) > MaxContext {
		return spec{}, check.Invalidf("schedule %q: context template is %d bytes, more than %d", s.ID, len(s.Context), MaxContext)
	}
	if err := check.JSONObject("context template", s.Context); err != nil {
		return spec{}, err
	}
	sp, err := parseSpec(s)
	if err != nil {
		return spec{}, err
	}
	switch s.Overlap {
	case "":
		s.Overlap = Skip
	case Skip, BufferOne, AllowAll, CancelPrevious:
	default:
		return spec{}, check.Invalidf("schedule %q: unknown overlap policy %q (want skip, buffer_one, allow_all or cancel_previous)", s.ID, s.Overlap)
	}
	switch s.CatchUp {
	case "":
		s.CatchUp = Latest
	case Latest, All, None:
	default:
		return spec{}, check.Invalidf("schedule %q: unknown catch-up policy %q (want latest, all or none)", s.ID, s.CatchUp)
	}
	if s.CatchUpWindow < 0 || s.CatchUpWindow%time.Microsecond != 0 {
		return spec{}, check.Invalidf("schedule %q: catch-up window %v: want whole microseconds, not negative", s.ID, s.CatchUpWindow)
	}
	if s.CatchUpWindow == 0 {
		s.CatchUpWindow = DefaultCatchUpWindow
	}
	if s.Jitter < 0 || s.Jitter%time.Microsecond != 0 {
		return spec{}, check.Invalidf("schedule %q: jitter %v: want whole microseconds, not negative", s.ID, s.Jitter)
	}
	if s.Every > 0 && s.Jitter >= s.Every {
		return spec{}, check.Invalidf("schedule %q: jitter %v is not shorter than the interval %v", s.ID, s.Jitter, s.Every)
	}
	if s.Every == 0 && s.TimeZone == "" {
		s.TimeZone = "UTC"
	}
	return sp, nil
}

// config is what a backend keeps of a schedule as one opaque document: the columns it reads
// (next tick, paused, version) are kept beside it.
type config struct {
	DefinitionID  string          `json:"definition_id"`
	Context       json.RawMessage `json:"context,omitempty"`
	Cron          string          `json:"cron,omitempty"`
	TimeZone      string          `json:"time_zone,omitempty"`
	EveryUS       int64           `json:"every_us,omitempty"`
	JitterUS      int64           `json:"jitter_us,omitempty"`
	Overlap       Overlap         `json:"overlap"`
	CatchUp       CatchUp         `json:"catch_up"`
	CatchUpWindow int64           `json:"catch_up_window_us"`
	CreatedAt     time.Time       `json:"created_at"`
}

func encode(s *Schedule) Record {
	c := config{DefinitionID: s.DefinitionID, Context: s.Context, Cron: s.Cron, TimeZone: s.TimeZone,
		EveryUS: s.Every.Microseconds(), JitterUS: s.Jitter.Microseconds(), Overlap: s.Overlap, CatchUp: s.CatchUp,
		CatchUpWindow: s.CatchUpWindow.Microseconds(), CreatedAt: s.CreatedAt}
	data, err := json.Marshal(c)
	if err != nil {
		panic(err) // every field marshals; the context was checked
	}
	return Record{ID: s.ID, Data: data, Paused: s.Paused, NextTick: s.NextTick, LastTick: s.LastTick,
		LastExecutionID: s.LastExecutionID, Version: s.Version, UpdatedAt: s.UpdatedAt}
}

func decode(r Record) (*Schedule, error) {
	var c config
	if err := json.Unmarshal(r.Data, &c); err != nil {
		return nil, fmt.Errorf("schedule %q: stored document: %w", r.ID, err)
	}
	return &Schedule{ID: r.ID, DefinitionID: c.DefinitionID, Context: c.Context, Cron: c.Cron, TimeZone: c.TimeZone,
		Every: time.Duration(c.EveryUS) * time.Microsecond, Jitter: time.Duration(c.JitterUS) * time.Microsecond,
		Overlap: c.Overlap, CatchUp: c.CatchUp, CatchUpWindow: time.Duration(c.CatchUpWindow) * time.Microsecond,
		Paused: r.Paused, NextTick: r.NextTick, LastTick: r.LastTick, LastExecutionID: r.LastExecutionID,
		Version: r.Version, CreatedAt: c.CreatedAt, UpdatedAt: r.UpdatedAt}, nil
}
