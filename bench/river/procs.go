package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/steadhq/stead/worker"
)

// processesRound seeds executions×eventsPer events in a fresh schema, starts procs worker
// processes of this binary (workerMain) in mode, releases them together and measures until
// every execution is done. workerCPUs, unless empty, is the CPU list (taskset's) the worker
// processes run on.
func processesRound(ctx context.Context, h *harness, mode workerMode, procs, executions, eventsPer int, workerCPUs string) (measure, error) {
	schema := newSchema()
	defer dropSchema(context.WithoutCancel(ctx), h.url, schema)
	s, err := openStead(ctx, h.url, schema, 8, nil)
	if err != nil {
		return measure{}, err
	}
	defer s.close()
	if err := seed(ctx, s, executions, eventsPer); err != nil {
		return measure{}, fmt.Errorf("stead seed: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return measure{}, err
	}
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	var children []child
	defer func() {
		for _, c := range children {
			c.stdin.Close()
		}
		for _, c := range children {
			_ = c.cmd.Wait()
		}
	}()
	for i := range procs {
		argv := []string{self, "worker", "-url", h.url, "-schema", schema,
			"-last", strconv.Itoa(eventsPer - 1), "-loops", strconv.Itoa(mode.loops),
			"-batch", strconv.Itoa(mode.batch), "-shared=" + strconv.FormatBool(mode.shared),
			"-name", fmt.Sprintf("speed-%d", i)}
		if workerCPUs != "" {
			argv = append([]string{"taskset", "-c", workerCPUs}, argv...)
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			return measure{}, err
		}
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			return measure{}, err
		}
		if err := cmd.Start(); err != nil {
			return measure{}, err
		}
		c := child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
		children = append(children, c)
	}
	for i, c := range children {
		line, err := c.out.ReadString('\n')
		if err != nil || line != "ready\n" {
			return measure{}, fmt.Errorf("worker process %d did not start: %q %v", i, line, err)
		}
	}
	conn, err := pgx.Connect(ctx, h.url)
	if err != nil {
		return measure{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "CHECKPOINT"); err != nil {
		return measure{}, err
	}
	m, err := h.begin(ctx, nil)
	if err != nil {
		return measure{}, err
	}
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			return measure{}, err
		}
	}
	q := "SELECT count(*) FROM " + pgx.Identifier{schema, "stead_executions"}.Sanitize() + " WHERE status = 'done'"
	deadline := time.Now().Add(h.limit)
	var doneExecs int
	for {
		if err := conn.QueryRow(ctx, q).Scan(&doneExecs); err != nil {
			return measure{}, err
		}
		if doneExecs >= executions || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	res, err := h.end(ctx, m, doneExecs*eventsPer, nil)
	res.partial = doneExecs < executions
	return res, err
}

// workerMain is a worker process of processesRound: it opens the schema, says "ready", waits for
// "go" on its standard input, and works until the input closes.
func workerMain(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	url := fs.String("url", "", "server URL")
	schema := fs.String("schema", "", "stead's schema")
	last := fs.Int("last", 9, "ticks per execution")
	loops := fs.Int("loops", 0, "claim loops (0: default)")
	batch := fs.Int("batch", 0, "batch size (0: default)")
	shared := fs.Bool("shared", false, "shared transaction")
	name := fs.String("name", "", "worker name")
	if err := fs.Parse(args); err != nil {
		return err
	}
	s, err := openStead(ctx, *url, *schema, steadPoolSize(*loops), nil)
	if err != nil {
		return err
	}
	defer s.close()
	mode := workerMode{loops: *loops, batch: *batch, shared: *shared}
	cfg, err := mode.config(s, *last)
	if err != nil {
		return err
	}
	cfg.Name = *name
	w, err := worker.New(cfg)
	if err != nil {
		return err
	}
	in := bufio.NewReader(os.Stdin)
	fmt.Println("ready")
	if line, err := in.ReadString('\n'); err != nil || line != "go\n" {
		return nil // the parent gave up before the start
	}
	runCtx, stop := context.WithCancel(ctx)
	go func() {
		_, _ = io.Copy(io.Discard, in) // returns when the parent closes the pipe
		stop()
	}()
	if err := w.Run(runCtx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// pinServer sets the CPU affinity of the cluster's postmaster and of every process it has
// started to cpus (a taskset CPU list); the backends it forks later inherit it.
func pinServer(ctx context.Context, h *harness, cpus string) error {
	pids := []int{h.meter.pid}
	dirs, err := os.ReadDir("/proc")
	if err != nil {
		return err
	}
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil || pid == h.meter.pid {
			continue
		}
		if f := statFields(pid); len(f) > 3 && f[3] == strconv.Itoa(h.meter.pid) {
			pids = append(pids, pid)
		}
	}
	for _, pid := range pids {
		out, err := exec.CommandContext(ctx, "taskset", "-a", "-p", "-c", cpus, strconv.Itoa(pid)).CombinedOutput()
		if err != nil && pid == h.meter.pid {
			return fmt.Errorf("taskset of the postmaster: %v: %s", err, out)
		}
	}
	return nil
}
