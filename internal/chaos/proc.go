package chaos

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// The environment that makes a program that calls WorkerFromEnv (the chaos test binary, in its
// TestMain) run one drill worker instead of its usual work.
const (
	envURL        = "STEAD_CHAOS_WORKER_URL"
	envSchema     = "STEAD_CHAOS_WORKER_SCHEMA"
	envLedger     = "STEAD_CHAOS_WORKER_LEDGER"
	envName       = "STEAD_CHAOS_WORKER_NAME"
	envShared     = "STEAD_CHAOS_WORKER_SHARED"
	envVisibility = "STEAD_CHAOS_WORKER_VISIBILITY"
)

// WorkerFromEnv returns the worker configuration the environment names, and whether it names one.
func WorkerFromEnv() (WorkerConfig, bool) {
	url := os.Getenv(envURL)
	if url == "" {
		return WorkerConfig{}, false
	}
	vis, _ := time.ParseDuration(os.Getenv(envVisibility))
	shared, _ := strconv.ParseBool(os.Getenv(envShared))
	return WorkerConfig{URL: url, Schema: os.Getenv(envSchema), Ledger: os.Getenv(envLedger),
		Name: os.Getenv(envName), Shared: shared, Visibility: vis}, true
}

// process is one worker process of a drill.
type process struct {
	cfg  WorkerConfig
	cmd  *exec.Cmd
	done chan error
}

// startProcess starts the program at exe (which calls WorkerFromEnv) as the worker cfg, its
// output appended to logPath.
func startProcess(exe string, cfg WorkerConfig, logPath string) (*process, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), envURL+"="+cfg.URL, envSchema+"="+cfg.Schema, envLedger+"="+cfg.Ledger,
		envName+"="+cfg.Name, envShared+"="+strconv.FormatBool(cfg.Shared), envVisibility+"="+cfg.Visibility.String())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, fmt.Errorf("chaos: start worker %s: %w", cfg.Name, err)
	}
	p := &process{cfg: cfg, cmd: cmd, done: make(chan error, 1)}
	go func() {
		p.done <- cmd.Wait()
		log.Close()
	}()
	return p, nil
}

func (p *process) signal(sig syscall.Signal) error { return p.cmd.Process.Signal(sig) }

// kill kills the process and waits for it.
func (p *process) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a stopped process dies only once it runs
	_ = p.cmd.Process.Kill()
	<-p.done
}

// stop asks the process to stop (SIGTERM: a graceful shutdown) and waits for it, killing it
// after timeout.
func (p *process) stop(timeout time.Duration) error {
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case err := <-p.done:
		return err
	case <-time.After(timeout):
		_ = p.cmd.Process.Kill()
		<-p.done
		return fmt.Errorf("chaos: worker %s did not stop within %v of SIGTERM", p.cfg.Name, timeout)
	}
}
