package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5"
)

// A pair is a primary and a synchronous streaming standby, two clusters of the drill's own (the
// standby made by pg_basebackup -R from the primary, synchronous_standby_names = '*' on the
// primary), which fail over to each other: the primary dies, the standby is promoted, and the
// old primary is rebuilt as the new primary's standby, as Patroni or a managed service does.
// With a synchronous standby every acknowledged commit is on both, so a failover loses nothing.
type pair struct {
	nodes   [2]*Cluster
	primary int // index of the primary in nodes
}

// startPair starts a primary under dir/a and its synchronous standby under dir/b.
func startPair(ctx context.Context, dir string) (*pair, error) {
	a, err := StartCluster(ctx, filepath.Join(dir, "a"))
	if err != nil {
		return nil, err
	}
	p := &pair{nodes: [2]*Cluster{a, nil}}
	b, err := newCluster(filepath.Join(dir, "b"))
	if err != nil {
		_ = a.Stop()
		return nil, err
	}
	p.nodes[1] = b
	if err := p.rebuildStandby(ctx); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *pair) primaryNode() *Cluster { return p.nodes[p.primary] }
func (p *pair) standbyNode() *Cluster { return p.nodes[1-p.primary] }

// rebuildStandby makes the standby node a fresh copy of the primary (its data directory
// replaced: a dead or demoted primary cannot rejoin as it is), starts it, and makes the
// primary's commits wait for it again.
func (p *pair) rebuildStandby(ctx context.Context) error {
	pri, sb := p.primaryNode(), p.standbyNode()
	if err := os.RemoveAll(sb.dir); err != nil {
		return err
	}
	if out, err := sb.run(ctx, "pg_basebackup", "-h", "127.0.0.1", "-p", fmt.Sprint(pri.port), "-U", "postgres",
		"-D", sb.dir, "-R", "-X", "stream", "-c", "fast"); err != nil {
		return fmt.Errorf("chaos: pg_basebackup: %w: %s", err, out)
	}
	if err := sb.appendConf(fmt.Sprintf("\nport = %d\n", sb.port)); err != nil {
		return err
	}
	if _, err := sb.Start(ctx); err != nil {
		return err
	}
	if err := setSync(ctx, pri, "*"); err != nil {
		return err
	}
	// Wait until the standby is the synchronous one: from then on a commit is acknowledged only
	// once it is on both.
	deadline := time.Now().Add(time.Minute)
	for {
		var n int
		err := query(ctx, pri, func(c *pgx.Conn) error {
			return c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'").Scan(&n)
		})
		if err == nil && n == 1 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("chaos: the standby did not become synchronous within a minute (%v)", err)
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

// promote promotes the standby and makes it the primary; its commits stop waiting for a
// standby until the old primary is rebuilt as one (what a failover manager does while the pair
// is down to one node). It returns the moment pg_ctl reported the promotion done.
func (p *pair) promote(ctx context.Context) (time.Time, error) {
	sb := p.standbyNode()
	if out, err := sb.run(ctx, "pg_ctl", "-D", sb.dir, "-w", "-t", "60", "promote"); err != nil {
		return time.Time{}, fmt.Errorf("chaos: promote: %w: %s", err, out)
	}
	promoted := time.Now() // it takes writes; they wait for no standby once the setting below is in
	if err := setSync(ctx, sb, ""); err != nil {
		return time.Time{}, err
	}
	p.primary = 1 - p.primary
	return promoted, nil
}

func (p *pair) stop() {
	for _, n := range p.nodes {
		if n != nil {
			_ = n.Stop()
		}
	}
}

// setSync sets synchronous_standby_names on c and reloads its configuration.
func setSync(ctx context.Context, c *Cluster, names string) error {
	return query(ctx, c, func(conn *pgx.Conn) error {
		if _, err := conn.Exec(ctx, "ALTER SYSTEM SET synchronous_standby_names = "+quoteLiteral(names)); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "SELECT pg_reload_conf()")
		return err
	})
}

// query runs fn on a connection of its own to c.
func query(ctx context.Context, c *Cluster, fn func(*pgx.Conn) error) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, c.URL())
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return fn(conn)
}

func quoteLiteral(s string) string {
	out := []byte{'\''}
	for i := 0; i < len(s); i++ {
		if s[i] == '\'' {
			out = append(out, '\'')
		}
		out = append(out, s[i])
	}
	return string(append(out, '\''))
}
