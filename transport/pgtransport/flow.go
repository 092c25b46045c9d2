package pgtransport

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/transport"
)

var _ transport.Limiter = (*Backend)(nil)

// Forget implements transport.Limiter in one round trip (transport_flow_forget). It waits for
// the transactions that hold the groups: a claim inside a caller's transaction holds its groups
// until that transaction ends.
func (b *Backend) Forget(ctx context.Context, groups []string) error {
	var freed int
	if err := b.pool.QueryRow(ctx, b.st.Forget, groups, b.now(), b.notifyChannel()).Scan(&freed); err != nil {
		return fail("forget", err)
	}
	if freed > 0 {
		b.sig.Notify()
	}
	return nil
}

// FlowState implements transport.Limiter in one statement, which counts the key's groups.
func (b *Backend) FlowState(ctx context.Context, key string) (transport.FlowState, error) {
	var (
		conc, rate        int32
		per               int64
		admitted, waiting int64
	)
	err := b.pool.QueryRow(ctx, b.st.FlowState, key).Scan(&conc, &rate, &per, &admitted, &waiting)
	if errors.Is(err, pgx.ErrNoRows) {
		return transport.FlowState{Flow: transport.Flow{Key: key}}, nil
	}
	if err != nil {
		return transport.FlowState{}, fail("flow state", err)
	}
	return transport.FlowState{
		Flow:     transport.Flow{Key: key, Concurrency: int(conc), Rate: int(rate), Per: time.Duration(per) * time.Microsecond},
		Admitted: int(admitted),
		Waiting:  int(waiting),
	}, nil
}
