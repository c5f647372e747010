package standalone

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// process is a child process that supervise keeps running: Envoy, or the
// global rate-limit service (ratelimit.go).
type process struct {
	// name is the process in log messages ("Envoy").
	name string
	path string
	args []string
	// env, when not nil, is the whole environment of the process (nil:
	// ours).
	env []string
	// logPath receives its output (appended).
	logPath string
	// started, when not nil, receives each new process id.
	started func(pid int)
}

// supervise runs p until ctx ends, restarting it whenever it exits, with a
// back-off that starts at 250ms, doubles up to 30s, and falls back to
// 250ms after a run that lasted over a minute. On ctx end the process gets
// SIGTERM, then SIGKILL after 5 seconds.
func supervise(ctx context.Context, log *slog.Logger, p process) {
	backoff := 250 * time.Millisecond
	for ctx.Err() == nil {
		began := time.Now()
		err := runOnce(ctx, p)
		if ctx.Err() != nil {
			return
		}
		if time.Since(began) > time.Minute {
			backoff = 250 * time.Millisecond
		}
		log.Error(p.name+" exited; restarting", "error", err, "after", backoff, "log", p.logPath)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 30*time.Second)
	}
}

func runOnce(ctx context.Context, p process) error {
	logf, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	var offset int64
	if st, err := logf.Stat(); err == nil {
		offset = st.Size()
	}
	cmd := exec.Command(p.path, p.args...)
	cmd.Env = p.env
	cmd.Stdout, cmd.Stderr = logf, logf
	// The process dies with us even if we are killed without a chance to stop it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if p.started != nil {
		p.started(cmd.Process.Pid)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			err = errors.New("exited with status 0")
		}
		if last := lastLine(p.logPath, offset); last != "" {
			err = fmt.Errorf("%w: %s", err, last)
		}
		return err
	case <-ctx.Done():
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return ctx.Err()
	}
}

// lastLine returns the last non-empty line a process wrote to its log after
// offset (bytes), at most 500 bytes of it: the reason it stopped, as a rule.
func lastLine(path string, offset int64) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, err := io.ReadAll(io.NewSectionReader(f, offset, 1<<20))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	if len(last) > 500 {
		last = last[:500]
	}
	return last
}
