package chaos

import (
	"context"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/internal/faultproxy"
)

// ShortFailover is the failover drill ./test.sh runs: a clean failover and the fail back, a
// black-holed primary, and a worker partitioned past its lease, in about a minute.
func ShortFailover() Plan {
	return Plan{Executions: 40, Workers: 2, Rate: 300, ArmEvery: 10, Visibility: 6 * time.Second,
		Failovers: 2, BlackHoles: 1, Partitions: 1, Gap: time.Second, Burst: 500, Settle: 3 * time.Minute}
}

// LongFailover is the full failover drill: five failovers (each the other way) and five black
// holes in a row, and three partitions.
func LongFailover() Plan {
	return Plan{Executions: 100, Workers: 3, Rate: 400, ArmEvery: 10, Visibility: 10 * time.Second,
		Failovers: 5, BlackHoles: 5, Partitions: 3, Gap: time.Second, Burst: 3000, Settle: 5 * time.Minute}
}

func (p Plan) failover() bool { return p.Failovers+p.BlackHoles+p.Partitions > 0 }

// Failover is one failover fault and the recovery after it.
type Failover struct {
	Kind      string        // "failover", "black hole" or "partition"
	Backlog   int           // messages waiting in the queue at the fault
	FirstStep time.Duration // from the promotion to the first step applied (-1: none; not for a partition)
	Drained   time.Duration // from the promotion (a partition: from its start) to the burst applied
}

// runFailover runs the plan on a primary and its synchronous standby, every client (the drill's
// pool and each worker process) connecting through proxies of its own to both, with a
// multi-host URL: the proxies are where black holes and partitions are made.
func (d *drill) runFailover(ctx context.Context) (*Report, error) {
	d.plan.Restarts, d.plan.CASRounds = 0, 0 // one server to restart, and a CAS race, are the other drill's
	var err error
	if d.pair, err = startPair(ctx, filepath.Join(d.env.Dir, "pair")); err != nil {
		return nil, err
	}
	defer d.pair.stop()
	d.proxies = make(map[int]*[2]*faultproxy.Proxy)
	defer func() {
		for _, ps := range d.proxies {
			for _, p := range ps {
				if p != nil {
					p.Close()
				}
			}
		}
	}()
	for k := -1; k < d.plan.Workers; k++ {
		var ps [2]*faultproxy.Proxy
		d.proxies[k] = &ps
		for n, node := range d.pair.nodes {
			if ps[n], err = faultproxy.New(node.Addr()); err != nil {
				return nil, err
			}
		}
	}
	if err := d.open(ctx); err != nil {
		return nil, err
	}
	defer d.close()
	defer d.stopAll()
	if err := d.run(ctx); err != nil {
		return d.rep, err
	}
	return d.rep, nil
}

// url is the URL client k (-1: the drill itself) connects with: the single server's, or in a
// failover drill both nodes through k's proxies, the read-write one chosen at each connect.
func (d *drill) url(k int) string {
	if d.pair == nil {
		return d.cluster.URL()
	}
	ps := d.proxies[k]
	u, _ := url.Parse(d.pair.nodes[0].URL())
	u.Host = ps[0].Addr() + "," + ps[1].Addr()
	q := u.Query()
	q.Set("target_session_attrs", "read-write")
	u.RawQuery = q.Encode()
	return u.String()
}

// failovers makes the plan's failover faults, one after another, each recovered from before the
// next.
func (d *drill) failovers(ctx context.Context) error {
	p := d.plan
	kinds := []struct {
		n    int
		kind string
	}{{p.Failovers, "failover"}, {p.BlackHoles, "black hole"}, {p.Partitions, "partition"}}
	i := 0
	for _, k := range kinds {
		for j := range k.n {
			var f Failover
			var err error
			if k.kind == "partition" {
				f, err = d.partition(ctx, i, j)
			} else {
				f, err = d.failover(ctx, i, k.kind == "black hole")
			}
			if err != nil {
				return err
			}
			d.rep.Failovers = append(d.rep.Failovers, f)
			if k.kind == "partition" {
				d.env.Logf("partition %d/%d: backlog %d, applied %v after the partition began",
					j+1, k.n, f.Backlog, f.Drained.Round(time.Millisecond))
			} else {
				d.env.Logf("%s %d/%d: backlog %d; first step %v after the promotion, the backlog applied after %v",
					k.kind, j+1, k.n, f.Backlog, f.FirstStep.Round(time.Millisecond), f.Drained.Round(time.Millisecond))
			}
			i++
		}
	}
	return nil
}

// failover queues a burst, kills the primary — black-holing its traffic first when blackHole,
// so that its clients see silence instead of closed connections — promotes the standby after
// Gap, measures how long the workers took to step on the new primary and to apply the burst,
// then rebuilds the old primary as the new one's standby.
func (d *drill) failover(ctx context.Context, i int, blackHole bool) (Failover, error) {
	f := Failover{Kind: "failover"}
	if blackHole {
		f.Kind = "black hole"
	}
	prefix := fmt.Sprintf("f%d-", i)
	d.feed.publish(ctx, prefix, d.plan.Burst, false)
	if err := d.backlog(ctx, &f.Backlog); err != nil {
		return f, err
	}
	old := d.pair.primary
	if blackHole {
		for _, ps := range d.proxies {
			ps[old].BlackHole()
		}
	}
	if err := d.pair.primaryNode().Crash(ctx); err != nil {
		return f, err
	}
	sleep(ctx, d.plan.Gap)
	promoted, err := d.pair.promote(ctx)
	if err != nil {
		return f, err
	}
	if f.Drained, err = d.drained(ctx, prefix, promoted); err != nil {
		return f, fmt.Errorf("chaos: %s %d: %w", f.Kind, i, err)
	}
	first, ok, err := d.ledgers.FirstAfter(promoted)
	if err != nil {
		return f, err
	}
	f.FirstStep = -1 // none: a problem
	if ok {
		f.FirstStep = first.Sub(promoted)
	}
	if err := d.pair.rebuildStandby(ctx); err != nil {
		return f, err
	}
	if blackHole {
		for _, ps := range d.proxies {
			ps[old].Cut() // the host comes back as a standby: what was held is gone with the old server
			ps[old].Heal()
		}
	}
	return f, nil
}

// partition queues a burst and cuts worker j's traffic to both nodes off, without a reset, for
// 1.5 × Visibility, past its leases; then heals it, delivering what it sent meanwhile (its late
// commits among it). Its executions must go to the others, and nothing be applied twice.
func (d *drill) partition(ctx context.Context, i, j int) (Failover, error) {
	f := Failover{Kind: "partition"}
	prefix := fmt.Sprintf("p%d-", i)
	d.feed.publish(ctx, prefix, d.plan.Burst, false)
	if err := d.backlog(ctx, &f.Backlog); err != nil {
		return f, err
	}
	k := j % d.plan.Workers
	start := time.Now()
	for _, p := range d.proxies[k] {
		p.BlackHole()
	}
	hang := d.plan.Visibility * 3 / 2
	d.env.Logf("partition %d: worker slot %d cut off for %v", j+1, k, hang)
	sleep(ctx, hang)
	for _, p := range d.proxies[k] {
		p.Heal()
	}
	var err error
	if f.Drained, err = d.drained(ctx, prefix, start); err != nil {
		return f, fmt.Errorf("chaos: partition %d: %w", j, err)
	}
	return f, nil
}

func (d *drill) backlog(ctx context.Context, n *int) error {
	return d.pool.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, "transport_messages"}.Sanitize()).Scan(n)
}

// drained waits until the burst under prefix is applied and returns when, after since.
func (d *drill) drained(ctx context.Context, prefix string, since time.Time) (time.Duration, error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		at, n, err := d.ledgers.AppliedBy(prefix)
		if err == nil && n == d.plan.Burst {
			return max(at.Sub(since), 0), nil
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of the %d burst events applied within 2 minutes", n, d.plan.Burst)
		}
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		sleep(ctx, 100*time.Millisecond)
	}
}

// failoverProblems are the failovers whose recovery missed within: the first step on the
// promoted standby later than that, or none.
func failoverProblems(fs []Failover, within time.Duration) []string {
	var out []string
	for i, f := range fs {
		if f.Kind == "partition" {
			continue
		}
		if f.FirstStep > within || f.FirstStep < 0 {
			out = append(out, fmt.Sprintf("%s %d: first step %v after the promotion, want within %v", f.Kind, i+1, f.FirstStep, within))
		}
	}
	return out
}

// kindsOf counts the failover faults by kind, for the report.
func kindsOf(fs []Failover) string {
	n := map[string]int{}
	var order []string
	for _, f := range fs {
		if n[f.Kind] == 0 {
			order = append(order, f.Kind)
		}
		n[f.Kind]++
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%d × %s", n[k], k))
	}
	return strings.Join(parts, ", ")
}
