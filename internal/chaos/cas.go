package chaos

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/steadhq/stead"
	"github.com/steadhq/stead/pgdb"
	"github.com/steadhq/stead/pgstore"
)

// runCAS races racers over two pools (two hosts, as far as the database can tell) to increment one
// execution's counter with load and compare-and-swap commit, until rounds commits have succeeded.
// Every success must show in the final counter and version: a lost update is a CAS that let two
// writers of one version both win.
func runCAS(ctx context.Context, url string, rounds, racers int) (CASResult, error) {
	res := CASResult{Rounds: rounds, Racers: racers}
	var stores [2]*stead.Store
	for i := range stores {
		pool, err := pgdb.Open(ctx, url, pgdb.Config{MaxConns: int32(racers/2 + 1)})
		if err != nil {
			return res, err
		}
		defer pool.Close()
		s, err := pgstore.New(ctx, pool, pgstore.WithSchema(schema))
		if err != nil {
			return res, err
		}
		defer s.Close()
		stores[i] = s
	}
	const id = "cas"
	if _, err := stores[0].Save(ctx, &stead.Execution{ID: id, DefinitionID: DefinitionID, Status: stead.StatusRunning,
		Context: json.RawMessage(`{"n":0}`)}); err != nil {
		return res, err
	}
	var won, conflicts, errs atomic.Int64
	start := time.Now()
	var wg sync.WaitGroup
	for r := range racers {
		s := stores[r%2]
		wg.Go(func() {
			for won.Load() < int64(rounds) && ctx.Err() == nil {
				exe, err := s.Load(ctx, id)
				if err != nil {
					errs.Add(1)
					continue
				}
				var c struct{ N int }
				if err := json.Unmarshal(exe.Context, &c); err != nil {
					errs.Add(1)
					continue
				}
				exe.Context = json.RawMessage(fmt.Sprintf(`{"n":%d}`, c.N+1))
				_, err = s.Commit(ctx, exe, stead.Bundle{})
				switch {
				case err == nil:
					won.Add(1)
				case errors.Is(err, stead.ErrConflict):
					conflicts.Add(1)
				default:
					errs.Add(1)
				}
			}
		})
	}
	wg.Wait()
	res.Took = time.Since(start)
	res.Conflicts, res.Errors = int(conflicts.Load()), int(errs.Load())
	exe, err := stores[1].Load(ctx, id)
	if err != nil {
		return res, err
	}
	var c struct{ N int }
	if err := json.Unmarshal(exe.Context, &c); err != nil {
		return res, err
	}
	wins := int(won.Load())
	res.Rounds = wins // racers may overshoot the target by the commits in flight at the end
	if c.N != wins || exe.Version != int64(wins)+1 {
		res.LostUpdates = max(wins-c.N, 1)
	}
	return res, ctx.Err()
}
