package transport_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/transport"
)

// recorder is a Backend that records what reaches it and returns canned leases.
type recorder struct {
	calls     []string
	published []transport.Outgoing
	leases    []transport.Lease
	closes    int
}

func (r *recorder) PublishBatch(_ context.Context, msgs []transport.Outgoing) error {
	r.calls = append(r.calls, "PublishBatch")
	r.published = msgs
	return nil
}

func (r *recorder) ClaimBatch(context.Context, string, time.Duration, int, int) ([]transport.Lease, error) {
	r.calls = append(r.calls, "ClaimBatch")
	return r.leases, nil
}

func (r *recorder) AckBatch(context.Context, []transport.Lease) error {
	r.calls = append(r.calls, "AckBatch")
	return nil
}

func (r *recorder) Nack(context.Context, *transport.Lease, time.Duration) error {
	r.calls = append(r.calls, "Nack")
	return nil
}

func (r *recorder) Wait(context.Context) error {
	r.calls = append(r.calls, "Wait")
	return nil
}

func (r *recorder) Close() error {
	r.closes++
	return nil
}

var (
	good  = stead.Event{ID: "e1", Kind: "k"}
	lease = &transport.Lease{Message: transport.Message{Seq: 1, Group: "G"}, Token: "w:1"}
)

// calls are one valid call of every method but Close.
var calls = []struct {
	name string
	call func(ctx context.Context, tr *transport.Transport) error
}{
	{"Publish", func(ctx context.Context, tr *transport.Transport) error { return tr.Publish(ctx, "G", good, 0) }},
	{"PublishBatch", func(ctx context.Context, tr *transport.Transport) error {
		return tr.PublishBatch(ctx, []transport.Outgoing{{Group: "G", Event: good}})
	}},
	{"Claim", func(ctx context.Context, tr *transport.Transport) error {
		_, err := tr.Claim(ctx, "w", time.Second, 0)
		return err
	}},
	{"ClaimBatch", func(ctx context.Context, tr *transport.Transport) error {
		_, err := tr.ClaimBatch(ctx, "w", time.Second, 0, 5)
		return err
	}},
	{"Ack", func(ctx context.Context, tr *transport.Transport) error { return tr.Ack(ctx, lease) }},
	{"AckBatch", func(ctx context.Context, tr *transport.Transport) error {
		return tr.AckBatch(ctx, []transport.Lease{*lease})
	}},
	{"Nack", func(ctx context.Context, tr *transport.Transport) error { return tr.Nack(ctx, lease, time.Second) }},
	{"Wait", func(ctx context.Context, tr *transport.Transport) error { return tr.Wait(ctx) }},
}

// TestRefusalsNeverReachTheBackend checks that a call after Close, or with a context already
// done, fails without calling the backend, and that Close closes the backend once.
func TestRefusalsNeverReachTheBackend(t *testing.T) {
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	for _, c := range calls {
		t.Run(c.name+"/after_close", func(t *testing.T) {
			r := &recorder{}
			tr := transport.New(r)
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
			if err := tr.Close(); err != nil {
				t.Fatalf("second Close = %v", err)
			}
			if err := c.call(context.Background(), tr); !errors.Is(err, stead.ErrClosed) {
				t.Fatalf("err = %v, want ErrClosed", err)
			}
			if len(r.calls) != 0 || r.closes != 1 {
				t.Fatalf("backend saw %v and %d closes, want nothing and 1", r.calls, r.closes)
			}
		})
		t.Run(c.name+"/context_done", func(t *testing.T) {
			r := &recorder{}
			if err := c.call(cancelled, transport.New(r)); !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if len(r.calls) != 0 {
				t.Fatalf("backend saw %v", r.calls)
			}
		})
	}
}

// TestPublishNormalisesACopy checks that the backend gets the events as every backend stores
// them (CreatedAt in UTC at microsecond precision, empty data as nil) while the caller's
// messages are left as they were, and that an empty batch reaches nothing.
func TestPublishNormalisesACopy(t *testing.T) {
	r := &recorder{}
	tr := transport.New(r)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.FixedZone("X", -5*3600))
	msgs := []transport.Outgoing{{Group: "G", Event: stead.Event{ID: "e", Kind: "k", Data: json.RawMessage{}, CreatedAt: at}}}
	if err := tr.PublishBatch(context.Background(), msgs); err != nil {
		t.Fatal(err)
	}
	got := r.published[0].Event
	if want := time.Date(2026, 1, 2, 8, 4, 5, 6000, time.UTC); got.CreatedAt != want {
		t.Errorf("backend got CreatedAt %v, want %v", got.CreatedAt, want)
	}
	if got.Data != nil {
		t.Errorf("backend got Data %#v, want nil", got.Data)
	}
	if msgs[0].Event.CreatedAt != at || msgs[0].Event.Data == nil {
		t.Errorf("the caller's message changed: %+v", msgs[0].Event)
	}
	r.calls = nil
	if err := tr.PublishBatch(context.Background(), nil); err != nil || len(r.calls) != 0 {
		t.Fatalf("PublishBatch(nil) = %v, backend saw %v", err, r.calls)
	}
	if err := tr.AckBatch(context.Background(), nil); err != nil || len(r.calls) != 0 {
		t.Fatalf("AckBatch(nil) = %v, backend saw %v", err, r.calls)
	}
}

// TestClaimNormalisesLeases checks that what a backend returns comes back in the one form every
// backend returns: UTC microsecond times, nil for empty data, an empty slice for nothing.
func TestClaimNormalisesLeases(t *testing.T) {
	local := time.FixedZone("X", 3600)
	r := &recorder{leases: []transport.Lease{{
		Message: transport.Message{Seq: 1, Group: "G", Event: stead.Event{
			ID: "e", Kind: "k", Data: json.RawMessage{}, CreatedAt: time.Date(2026, 1, 1, 1, 0, 0, 1500, local)}},
		Token: "w:1", Until: time.Date(2026, 1, 1, 2, 0, 0, 999, local),
	}}}
	tr := transport.New(r)
	l, err := tr.Claim(context.Background(), "w", time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC); l.Until != want {
		t.Errorf("Until = %v, want %v", l.Until, want)
	}
	if want := time.Date(2026, 1, 1, 0, 0, 0, 1000, time.UTC); l.Event.CreatedAt != want {
		t.Errorf("CreatedAt = %v, want %v", l.Event.CreatedAt, want)
	}
	if l.Event.Data != nil {
		t.Errorf("Data = %#v, want nil", l.Event.Data)
	}
	r.leases = nil
	ls, err := tr.ClaimBatch(context.Background(), "w", time.Second, 0, 3)
	if err != nil || ls == nil || len(ls) != 0 {
		t.Fatalf("ClaimBatch with nothing claimable = %#v, %v; want an empty slice", ls, err)
	}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name string
		err  error
	}{
		{"visibility zero", transport.CheckClaim("w", 0, 0, 1)},
		{"visibility above max", transport.CheckClaim("w", transport.MaxVisibility+time.Nanosecond, 0, 1)},
		{"min priority above max", transport.CheckClaim("w", time.Second, transport.MaxPriority+1, 1)},
		{"claim of none", transport.CheckClaim("w", time.Second, 0, 0)},
		{"claim above max batch", transport.CheckClaim("w", time.Second, 0, transport.MaxBatch+1)},
		{"nil lease", transport.CheckNack(nil, 0)},
		{"negative delay", transport.CheckNack(lease, -time.Nanosecond)},
		{"delay above max", transport.CheckNack(lease, transport.MaxVisibility+time.Nanosecond)},
		{"ack without token", transport.CheckAck([]transport.Lease{{Message: transport.Message{Group: "G"}}})},
		{"ack batch above max", transport.CheckAck(make([]transport.Lease, transport.MaxBatch+1))},
		{"event after 9999 in UTC", func() error {
			_, err := transport.PreparePublish([]transport.Outgoing{{Group: "G", Event: stead.Event{ID: "e", Kind: "k",
				CreatedAt: time.Date(9999, 12, 31, 20, 0, 0, 0, time.FixedZone("", -5*3600))}}})
			return err
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, stead.ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", tc.err)
			}
		})
	}
	for _, ok := range []error{
		transport.CheckClaim("w", transport.MaxVisibility, transport.MaxPriority, transport.MaxBatch),
		transport.CheckNack(lease, 0),
		transport.CheckNack(lease, transport.MaxVisibility),
		transport.CheckAck(nil),
	} {
		if ok != nil {
			t.Errorf("a check at its bound refused: %v", ok)
		}
	}
}
