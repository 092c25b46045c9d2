package transporttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// The rules of this file pin what backends could otherwise answer differently: the bounds of
// every argument, the form of returned times and data, and a context done before the call.

// est is a zone west of UTC, so that a time in it is a different date in UTC near midnight.
var est = time.FixedZone("EST", -5*3600)

// wantInvalid fails t unless err wraps stead.ErrInvalid.
func wantInvalid(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, stead.ErrInvalid) {
		t.Errorf("%s = %v, want ErrInvalid", what, err)
	}
}

func testLeaseUntilNormalised(t *testing.T, f Factory) {
	// A clock in another zone and with nanoseconds: the lease still ends in UTC, to the
	// microsecond.
	start := time.Date(2026, 6, 30, 22, 0, 0, 123456789, est)
	e := newEnvAt(t, f, start)
	e.publish("G", "e1", 0)
	l := e.claimID("w", Visibility, 0, "e1")
	want := start.Add(Visibility).UTC().Truncate(time.Microsecond)
	if !l.Until.Equal(want) || l.Until.Location() != time.UTC || l.Until.Nanosecond()%1000 != 0 {
		t.Fatalf("Until = %v, want %v", l.Until, want)
	}
	e.ack(l)
}

func testEventCreatedAtNormalised(t *testing.T, f Factory) {
	e := newEnv(t, f)
	ev := Event("e1")
	ev.CreatedAt = time.Date(2026, 3, 4, 21, 6, 7, 123456789, est)
	if err := e.tr.Publish(e.ctx, "G", ev, 0); err != nil {
		t.Fatal(err)
	}
	l := e.claim("e1")
	want := time.Date(2026, 3, 5, 2, 6, 7, 123456000, time.UTC)
	if !l.Event.CreatedAt.Equal(want) || l.Event.CreatedAt.Location() != time.UTC {
		t.Fatalf("CreatedAt = %v, want %v", l.Event.CreatedAt, want)
	}
}

func testEventTimeRange(t *testing.T, f Factory) {
	e := newEnv(t, f)
	at := func(tm time.Time) stead.Event { ev := Event("e"); ev.CreatedAt = tm; return ev }
	// Refused: outside the years 1 to 9999 once in UTC, whatever the offset says.
	for _, tc := range []struct {
		name string
		at   time.Time
	}{
		{"year 0", time.Date(0, 12, 31, 23, 0, 0, 0, time.UTC)},
		{"year 10000", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year 300000", time.Date(300000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year 17,941,134,906", time.Date(17941134906, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"9999-12-31 at -05:00 (10000 in UTC)", time.Date(9999, 12, 31, 20, 0, 0, 0, est)},
		{"0001-01-01 at +14:00 (year 0 in UTC)", time.Date(1, 1, 1, 10, 0, 0, 0, time.FixedZone("", 14*3600))},
	} {
		wantInvalid(t, "Publish with CreatedAt "+tc.name, e.tr.Publish(e.ctx, "G", at(tc.at), 0))
	}
	e.claim("") // nothing was written
	// Accepted, and returned as they were sent: the first and the last microsecond of the range.
	first := time.Date(1, 1, 1, 0, 0, 0, 1000, time.UTC)
	last := time.Date(9999, 12, 31, 23, 59, 59, 999999000, time.UTC)
	for i, tm := range []time.Time{first, last, last.In(est)} {
		ev := at(tm)
		ev.ID = string(rune('a' + i))
		if err := e.tr.Publish(e.ctx, "G", ev, 0); err != nil {
			t.Fatalf("Publish with CreatedAt %v: %v", tm, err)
		}
	}
	for i, want := range []time.Time{first, last, last} {
		l := e.claim(string(rune('a' + i)))
		if !l.Event.CreatedAt.Equal(want) || l.Event.CreatedAt.Location() != time.UTC {
			t.Errorf("CreatedAt = %v, want %v", l.Event.CreatedAt, want)
		}
		e.ack(l)
	}
}

func testEmptyData(t *testing.T, f Factory) {
	e := newEnv(t, f)
	for _, ev := range []stead.Event{
		{ID: "empty", Kind: "k", Data: json.RawMessage{}},
		{ID: "nil", Kind: "k"},
		{ID: "object", Kind: "k", Data: json.RawMessage(`{}`)},
	} {
		if err := e.tr.Publish(e.ctx, "G", ev, 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []struct {
		id   string
		data json.RawMessage
	}{{"empty", nil}, {"nil", nil}, {"object", json.RawMessage(`{}`)}} {
		l := e.claim(want.id)
		if (want.data == nil) != (l.Event.Data == nil) || !bytes.Equal(l.Event.Data, want.data) {
			t.Errorf("%s came back with Data %#v, want %#v", want.id, l.Event.Data, want.data)
		}
		e.ack(l)
	}
}

func testPriorityBounds(t *testing.T, f Factory) {
	e := newEnv(t, f)
	wantInvalid(t, "Publish at priority -1", e.tr.Publish(e.ctx, "G", Event("e"), -1))
	wantInvalid(t, "Publish above MaxPriority", e.tr.Publish(e.ctx, "G", Event("e"), transport.MaxPriority+1))
	_, err := e.tr.Claim(e.ctx, "w", Visibility, -1)
	wantInvalid(t, "Claim with minimum priority -1", err)
	_, err = e.tr.ClaimBatch(e.ctx, "w", Visibility, transport.MaxPriority+1, 1)
	wantInvalid(t, "ClaimBatch with minimum priority above MaxPriority", err)
	e.publish("lo", "l1", 0)
	e.publish("top", "t1", transport.MaxPriority)
	l := e.claimID("w", Visibility, transport.MaxPriority, "t1")
	if l.Priority != transport.MaxPriority {
		t.Fatalf("priority %d, want %d", l.Priority, transport.MaxPriority)
	}
	e.claimID("w", Visibility, transport.MaxPriority, "")
	e.claimID("w", Visibility, 0, "l1")
}

func testVisibilityBounds(t *testing.T, f Factory) {
	e := newEnv(t, f)
	for _, vis := range []time.Duration{0, -time.Nanosecond, -time.Hour, transport.MaxVisibility + time.Nanosecond} {
		_, err := e.tr.Claim(e.ctx, "w", vis, 0)
		wantInvalid(t, "Claim with visibility "+vis.String(), err)
		_, err = e.tr.ClaimBatch(e.ctx, "w", vis, 0, 2)
		wantInvalid(t, "ClaimBatch with visibility "+vis.String(), err)
	}
	e.publish("G", "g1", 0)
	e.publish("H", "h1", 0)
	l := e.claimID("w", transport.MaxVisibility, 0, "g1")
	if want := Start.Add(transport.MaxVisibility); !l.Until.Equal(want) {
		t.Fatalf("Until = %v, want %v", l.Until, want)
	}
	e.claimID("w", time.Second, 0, "h1")
}

func testDelayBounds(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "e1", 0)
	l := e.claim("e1")
	for _, d := range []time.Duration{-time.Nanosecond, -time.Hour, transport.MaxVisibility + time.Nanosecond} {
		wantInvalid(t, "Nack with delay "+d.String(), e.tr.Nack(e.ctx, l, d))
	}
	// The refused nacks changed nothing: the lease still holds the group.
	e.claimID("w2", Visibility, 0, "")
	e.nack(l, 0)
	l = e.claim("e1")
	e.nack(l, transport.MaxVisibility) // the longest park
	e.clock.Advance(transport.MaxVisibility)
	e.claim("") // a park that ends exactly now still holds
	e.clock.Advance(time.Second)
	e.ack(e.claim("e1"))
}

func testContextDone(t *testing.T, f Factory) {
	e := newEnv(t, f)
	e.publish("G", "g1", 0)
	l := e.claim("g1") // held, so that the ack and nack below have a current lease
	e.publish("H", "h1", 0)
	done, cancel := context.WithCancel(e.ctx)
	cancel()
	for _, c := range []struct {
		name string
		call func() error
	}{
		{"Publish", func() error { return e.tr.Publish(done, "K", Event("k1"), 0) }},
		{"PublishBatch", func() error {
			return e.tr.PublishBatch(done, []transport.Outgoing{{Group: "K", Event: Event("k2")}})
		}},
		{"PublishBatch of none", func() error { return e.tr.PublishBatch(done, nil) }},
		{"Claim", func() error { _, err := e.tr.Claim(done, "w", Visibility, 0); return err }},
		{"ClaimBatch", func() error { _, err := e.tr.ClaimBatch(done, "w", Visibility, 0, 5); return err }},
		{"Ack", func() error { return e.tr.Ack(done, l) }},
		{"AckBatch", func() error { return e.tr.AckBatch(done, []transport.Lease{*l}) }},
		{"AckBatch of none", func() error { return e.tr.AckBatch(done, nil) }},
		{"Nack", func() error { return e.tr.Nack(done, l, 0) }},
		{"Nack with a delay", func() error { return e.tr.Nack(done, l, time.Second) }},
		{"Wait", func() error { return e.tr.Wait(done) }},
	} {
		if err := c.call(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a context already done = %v, want context.Canceled", c.name, err)
		}
	}
	// Nothing was written: K has no message, H was not claimed, l still holds G.
	e.claimID("w2", Visibility, 0, "h1")
	e.claimID("w2", Visibility, 0, "")
	e.ack(l)
	e.claimID("w2", Visibility, 0, "")
}
