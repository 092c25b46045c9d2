package pgtransport_test

import (
	"context"
	"fmt"
	"time"

	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/transport/pgtransport"
)

// A worker's loop on the application's pool: claim, handle, ack; wait (LISTEN/NOTIFY, with a
// poll as a fallback) when nothing is claimable. It needs a server, so it is not run.
func Example() {
	ctx := context.Background()
	pool, err := pgdb.Open(ctx, "postgres://app@db:5432/app", pgdb.Config{MaxConns: 16})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer pool.Close() // after the transport: the pool is the application's
	tr, err := pgtransport.New(ctx, pool, pgtransport.WithSchema("stead"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()

	for ctx.Err() == nil {
		l, err := tr.Claim(ctx, "worker-1", 30*time.Second, 0)
		if err != nil {
			fmt.Println(err) // stead.ErrUnavailable: back off and retry
			continue
		}
		if l == nil {
			_ = tr.Wait(ctx)
			continue
		}
		fmt.Println(l.Group, l.Event.Kind)
		if err := tr.Ack(ctx, l); err != nil {
			fmt.Println(err)
		}
	}
}
