package benchutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Pgbench is one run of pgbench with a custom script: the ceiling the harnesses under bench/
// compare stead with.
type Pgbench struct {
	Bin      string            // the pgbench binary ("" looks it up on the PATH)
	DSN      string            // the server, as a URL or a conninfo string
	Script   string            // the script's text
	Clients  int               // -c
	Threads  int               // -j (0: as many as clients, at most 4)
	Seconds  int               // -T (at least 1)
	Prepared bool              // -M prepared
	Vars     map[string]string // -D name=value
}

// PgbenchResult is what a run reports.
type PgbenchResult struct {
	TPS          float64 // transactions per second, without the initial connection time
	Transactions int64   // transactions processed
}

// Run runs pgbench and parses its report. Failed transactions make it an error: a ceiling that
// skipped work is no ceiling.
func (p Pgbench) Run(ctx context.Context) (PgbenchResult, error) {
	bin := p.Bin
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("pgbench"); err != nil {
			return PgbenchResult{}, fmt.Errorf("pgbench is not on the PATH: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "stead-pgbench")
	if err != nil {
		return PgbenchResult{}, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "script.sql")
	if err := os.WriteFile(script, []byte(p.Script), 0o600); err != nil {
		return PgbenchResult{}, err
	}
	threads := p.Threads
	if threads <= 0 {
		threads = min(p.Clients, 4)
	}
	args := []string{"-n", "-f", script, "-c", strconv.Itoa(p.Clients), "-j", strconv.Itoa(threads),
		"-T", strconv.Itoa(max(1, p.Seconds))}
	if p.Prepared {
		args = append(args, "-M", "prepared")
	}
	for _, k := range slices.Sorted(mapKeys(p.Vars)) {
		args = append(args, "-D", k+"="+p.Vars[k])
	}
	args = append(args, p.DSN)
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		return PgbenchResult{}, fmt.Errorf("pgbench: %w: %s", err, lastLine(string(out)))
	}
	return ParsePgbench(string(out))
}

var (
	tpsLine    = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	txLine     = regexp.MustCompile(`number of transactions actually processed: (\d+)`)
	failedLine = regexp.MustCompile(`number of failed transactions: (\d+)`)
)

// ParsePgbench reads pgbench's report.
func ParsePgbench(out string) (PgbenchResult, error) {
	m, t := tpsLine.FindStringSubmatch(out), txLine.FindStringSubmatch(out)
	if m == nil || t == nil {
		return PgbenchResult{}, fmt.Errorf("pgbench report not understood: %s", lastLine(out))
	}
	if f := failedLine.FindStringSubmatch(out); f != nil && f[1] != "0" {
		return PgbenchResult{}, fmt.Errorf("pgbench had %s failed transactions", f[1])
	}
	tps, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return PgbenchResult{}, err
	}
	n, err := strconv.ParseInt(t[1], 10, 64)
	if err != nil {
		return PgbenchResult{}, err
	}
	return PgbenchResult{TPS: tps, Transactions: n}, nil
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return s
}
