package pgtransport

import (
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
)

func TestPlaceOrder(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(k pgtype.Timestamptz, g string) place {
		return place{key: k, group: pgtype.Text{String: g, Valid: true}}
	}
	never := pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	early := pgtype.Timestamptz{Time: t0, Valid: true}
	late := pgtype.Timestamptz{Time: t0.Add(time.Microsecond), Valid: true}
	tests := []struct {
		name string
		p, q place
		want bool
	}{
		{"any place after none", at(never, "a"), place{}, true},
		{"none after nothing", place{}, at(never, "a"), false},
		{"none after none", place{}, place{}, false},
		{"served after never served", at(early, "a"), at(never, "z"), true},
		{"never served before served", at(never, "z"), at(early, "a"), false},
		{"later service", at(late, "a"), at(early, "b"), true},
		{"same time: by id", at(early, "b"), at(early, "a"), true},
		{"same place", at(early, "a"), at(early, "a"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.after(tc.q); got != tc.want {
				t.Fatalf("after = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCursorRescans(t *testing.T) {
	var c cursor
	c.moveTo(place{group: pgtype.Text{String: "g", Valid: true}})
	heads := 0
	for range 3 * rescanEvery {
		if !c.from().group.Valid {
			heads++
		}
	}
	if heads != 3 {
		t.Fatalf("%d claims from the head in %d, want 3", heads, 3*rescanEvery)
	}
}
