package chart_test

import (
	"strings"
	"testing"
	"time"

	"github.com/steadhq/stead/chart"
)

func TestScheduleDeclarations(t *testing.T) {
	def, err := chart.Parse("sweep", []byte(limitBase+`
schedules:
  a: {every: 5m, jitter: 10s, overlap: buffer_one, context: {n: 1}}
  b: {cron: "*/5 * * * * *", zone: UTC, catch_up: all, window: 1h}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(def.Schedules) != 2 {
		t.Fatalf("Schedules = %d, want 2", len(def.Schedules))
	}
	a, b := def.Schedules[0], def.Schedules[1]
	if a.ID != "a" || a.Every != 5*time.Minute || a.Jitter != 10*time.Second || a.Overlap != "buffer_one" || string(a.Context) != `{"n":1}` {
		t.Errorf("a = %+v", a)
	}
	if b.ID != "b" || b.Cron != "*/5 * * * * *" || b.Zone != "UTC" || b.CatchUp != "all" || b.Window != time.Hour {
		t.Errorf("b = %+v", b)
	}
}

func TestScheduleDeclarationsRefused(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"neither", `{s: {overlap: skip}}`, "exactly one of cron and every"},
		{"both", `{s: {every: 1m, cron: "* * * * *"}}`, "exactly one of cron and every"},
		{"zone_without_cron", `{s: {every: 1m, zone: UTC}}`, "zone applies to cron only"},
		{"bad_overlap", `{s: {every: 1m, overlap: sometimes}}`, "overlap \"sometimes\""},
		{"bad_catch_up", `{s: {every: 1m, catch_up: maybe}}`, "catch_up \"maybe\""},
		{"bad_duration", `{s: {every: often}}`, "not a duration"},
		{"negative", `{s: {every: -1m}}`, "must be positive"},
		{"context_not_mapping", `{s: {every: 1m, context: [1]}}`, "context must be a mapping"},
		{"unknown_key", `{s: {every: 1m, when: now}}`, "unknown key \"when\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := chart.Parse("sweep", []byte(limitBase+"schedules: "+tc.yaml+"\n"))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Parse = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
