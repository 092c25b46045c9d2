package chaos

import (
	"context"
	"errors"
	"fmt"
	"github.com/jackc/pgx/v5"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Cluster is a throwaway PostgreSQL cluster of the drill's own: initdb in a directory of its own,
// a server on a free loopback port that only the drill uses, so that restarting it disturbs
// nobody (the shared test server is never touched). As root, every server program runs as the
// postgres user, since PostgreSQL refuses to run as root.
type Cluster struct {
	bin  string // the directory of initdb, pg_ctl and postgres
	dir  string // the cluster's data directory
	log  string // the server's log file
	port int
	as   []string // the command prefix that runs as the cluster's owner
}

// StartCluster creates a cluster under dir (created if missing; it must hold no cluster yet) and
// starts its server. Stop it with Stop.
func StartCluster(ctx context.Context, dir string) (*Cluster, error) {
	c, err := newCluster(dir)
	if err != nil {
		return nil, err
	}
	if out, err := c.run(ctx, "initdb", "-D", c.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8"); err != nil {
		return nil, fmt.Errorf("chaos: initdb: %w: %s", err, out)
	}
	// The drill measures recovery, not the disk: no fsync, since a crash of the server alone
	// (the OS keeps running) loses nothing that was written either way. Commits stay synchronous:
	// an asynchronous commit acknowledged before a crash would be lost by design. Connections
	// enough for every worker process and the drill.
	conf := fmt.Sprintf("\nlisten_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = ''\n"+
		"fsync = off\nmax_connections = 200\nshared_buffers = 64MB\n", c.port)
	if err := c.appendConf(conf); err != nil {
		return nil, err
	}
	if _, err := c.Start(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

// newCluster prepares dir for a cluster of its own (the data directory inside it, owned by the
// postgres user when running as root) on a free port; nothing is created in it yet.
func newCluster(dir string) (*Cluster, error) {
	bin, err := findBin()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: filepath.Join(dir, "data"), log: filepath.Join(dir, "server.log")}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			return nil, fmt.Errorf("chaos: running as root needs a postgres user to own the cluster: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chmod(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return nil, err
		}
		// The parents inside the temp dir must be traversable by the postgres user too (a test's
		// temp dir is 0700); nothing outside it is touched.
		tmp := filepath.Clean(os.TempDir())
		for p := filepath.Dir(dir); strings.HasPrefix(p, tmp+string(filepath.Separator)); p = filepath.Dir(p) {
			if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
				_ = os.Chmod(p, fi.Mode().Perm()|0o011)
			}
		}
		c.as = []string{"runuser", "-u", "postgres", "--"}
	}
	if c.port, err = freePort(); err != nil {
		return nil, err
	}
	return c, nil
}

// appendConf appends settings to the cluster's postgresql.conf (a later line wins).
func (c *Cluster) appendConf(conf string) error {
	f, err := os.OpenFile(filepath.Join(c.dir, "postgresql.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(conf)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Addr is the server's "127.0.0.1:port".
func (c *Cluster) Addr() string { return fmt.Sprintf("127.0.0.1:%d", c.port) }

// URL is the cluster's connection URL.
func (c *Cluster) URL() string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", c.port)
}

// Start starts the server and returns when it accepts connections, with that moment.
func (c *Cluster) Start(ctx context.Context) (time.Time, error) {
	if out, err := c.run(ctx, "pg_ctl", "-D", c.dir, "-l", c.log, "-w", "-t", "60", "start"); err != nil {
		return time.Time{}, fmt.Errorf("chaos: start the server: %w: %s", err, out)
	}
	return time.Now(), nil
}

// Crash stops the server at once, as a crash would (pg_ctl's immediate mode: no checkpoint, every
// connection cut; the next start recovers from the WAL).
func (c *Cluster) Crash(ctx context.Context) error {
	if out, err := c.run(ctx, "pg_ctl", "-D", c.dir, "-m", "immediate", "-w", "stop"); err != nil {
		return fmt.Errorf("chaos: stop the server: %w: %s", err, out)
	}
	return nil
}

// Restart crashes the server, leaves it down for down, starts it again and returns when it
// accepts connections, with that moment.
func (c *Cluster) Restart(ctx context.Context, down time.Duration) (time.Time, error) {
	if err := c.Crash(ctx); err != nil {
		return time.Time{}, err
	}
	t := time.NewTimer(down)
	select {
	case <-ctx.Done():
		t.Stop()
		return time.Time{}, ctx.Err()
	case <-t.C:
	}
	return c.Start(ctx)
}

// Stop stops the server (fast mode). The data directory stays for the caller to remove.
func (c *Cluster) Stop() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := c.run(ctx, "pg_ctl", "-D", c.dir, "-m", "fast", "-w", "stop"); err != nil {
		return fmt.Errorf("chaos: stop the server: %w: %s", err, out)
	}
	return nil
}

func (c *Cluster) run(ctx context.Context, prog string, args ...string) (string, error) {
	argv := append(append(append([]string(nil), c.as...), filepath.Join(c.bin, prog)), args...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// ErrNoPostgres is returned by StartCluster when no PostgreSQL server programs are installed.
var ErrNoPostgres = errors.New("chaos: no PostgreSQL server programs (initdb, pg_ctl) found")

// findBin returns the directory of the PostgreSQL server programs: pg_config's, else the newest
// of Debian's /usr/lib/postgresql/*/bin.
func findBin() (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		dir := strings.TrimSpace(string(out))
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoPostgres
}

func version(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// StartStockCluster is StartCluster for a benchmark: it puts back the settings the drill changes
// for its own purpose, so that the figures are a stock server's: fsync on and the
// default shared_buffers (128MB; the drill's postgresql.conf says 64MB, and ALTER SYSTEM's file
// wins over it). The drill's connection limit (200) stays, for the worker processes.
// track_functions is on, for benchmarks that read the functions' own times.
func StartStockCluster(ctx context.Context, dir string) (*Cluster, error) {
	c, err := StartCluster(ctx, dir)
	if err != nil {
		return nil, err
	}
	conn, err := pgx.Connect(ctx, c.URL())
	if err != nil {
		c.Stop()
		return nil, err
	}
	for _, q := range []string{"ALTER SYSTEM SET fsync = on", "ALTER SYSTEM SET shared_buffers = '128MB'",
		"ALTER SYSTEM SET track_functions = 'all'"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			conn.Close(ctx)
			c.Stop()
			return nil, err
		}
	}
	conn.Close(ctx)
	// shared_buffers takes a restart; the postgresql.auto.conf that ALTER SYSTEM wrote wins
	// over postgresql.conf.
	if err := c.Stop(); err != nil {
		return nil, err
	}
	if _, err := c.Start(ctx); err != nil {
		return nil, err
	}
	conn, err = pgx.Connect(ctx, c.URL())
	if err != nil {
		c.Stop()
		return nil, err
	}
	defer conn.Close(ctx)
	var fsync, sb, av string
	if err := conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('shared_buffers'), current_setting('autovacuum')").
		Scan(&fsync, &sb, &av); err != nil {
		c.Stop()
		return nil, err
	}
	if fsync != "on" || av != "on" {
		c.Stop()
		return nil, fmt.Errorf("cluster settings: fsync=%s autovacuum=%s, want on", fsync, av)
	}
	return c, nil
}
