package targets

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/idemcheck/idemcheck"
)

// Port returns the instance's loopback port, the same across restarts.
func (i *Instance) Port() int { return i.port }

// PID returns the process id of the instance's latest start: the leader of
// its process group, which is the shell running the command (or the
// command itself, when the shell replaces itself with it, as with
// "exec ./bin/orders"). It is 0 if the instance never started.
func (i *Instance) PID() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cur == nil {
		return 0
	}
	return i.cur.cmd.Process.Pid
}

// Kill crashes the instance: SIGKILL to its whole process group and every
// process it started, those that left the group included (setsid), then a
// wait until the command has been reaped, nothing it started runs and its
// port refuses connections. A paused instance is killed too. Killing an
// instance that has already exited is not an error; one that cannot be
// confirmed dead is, a NotDeadError (ErrNotDead).
func (i *Instance) Kill() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cur != nil {
		i.cur.kill()
	}
	return i.confirmDead()
}

// freeze stops the instance's process group with SIGSTOP, as Pause does,
// before a kill: a stopped process sees nothing, another instance's death
// included. It waits (bounded) until every process of the group has
// stopped, and does nothing to an instance that is not running.
func (i *Instance) freeze() {
	i.mu.Lock()
	defer i.mu.Unlock()
	if _, err := i.running("freeze"); err != nil {
		return
	}
	pid := i.cur.cmd.Process.Pid
	if signalGroup(pid, sigStop) != nil {
		return
	}
	deadline := time.Now().Add(processPauseTimeout)
	for !groupStopped(pid) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// Restart starts the instance again on the same port and waits until it
// passes the readiness probe, bounded by ctx and the readiness timeout. A
// running (or paused) instance is killed first, as by Kill. On error the
// new start is gone again when Restart returns.
func (i *Instance) Restart(ctx context.Context) error {
	i.mu.Lock()
	if i.p.closed.Load() {
		i.mu.Unlock()
		return fmt.Errorf("cannot restart target %s %q: it was closed", i.label, i.p.cfg.Command)
	}
	if i.cur != nil {
		i.cur.kill()
		if err := i.confirmDead(); err != nil {
			// A start now would meet the old process on the port.
			i.mu.Unlock()
			return err
		}
	}
	r, err := i.start()
	if err == nil {
		i.cur = r
	}
	i.mu.Unlock()
	if err != nil {
		return err
	}
	return i.waitReady(ctx, r)
}

// Revive restarts the instance, as Restart does, if it is not running (it
// exited by itself, or was killed), and reports whether it did. A running
// or paused instance is left alone.
func (i *Instance) Revive(ctx context.Context) (bool, error) {
	i.mu.Lock()
	_, err := i.running("revive")
	i.mu.Unlock()
	if err == nil {
		return false, nil
	}
	return true, i.Restart(ctx)
}

// Pause stops every process of the instance with SIGSTOP, as a long
// garbage-collection pause or a frozen VM would: connections are still
// accepted by the kernel but nothing is answered until Resume. On Linux it
// returns once every process in the group has actually stopped.
func (i *Instance) Pause() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r, err := i.running("pause")
	if err != nil {
		return err
	}
	pid := r.cmd.Process.Pid
	if err := signalGroup(pid, sigStop); err != nil {
		return err
	}
	deadline := time.Now().Add(processPauseTimeout)
	for !groupStopped(pid) {
		if time.Now().After(deadline) {
			return fmt.Errorf("target %s %q got SIGSTOP but not all of its processes stopped within %v", i.label, i.p.cfg.Command, processPauseTimeout)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Resume continues a paused instance with SIGCONT. Resuming an instance
// that is not paused is harmless.
func (i *Instance) Resume() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r, err := i.running("resume")
	if err != nil {
		return err
	}
	return signalGroup(r.cmd.Process.Pid, sigCont)
}

// Tail returns the last 64 KiB or so of the instance's output, across
// restarts, for error messages.
func (i *Instance) Tail() string { return i.tail.String() }

// running returns the current run if its command is still running.
// Callers hold i.mu.
func (i *Instance) running(what string) (*processRun, error) {
	r := i.cur
	if r != nil && !r.groupKilled {
		select {
		case <-r.exited:
		default:
			return r, nil
		}
	}
	return nil, fmt.Errorf("cannot %s target %s %q: it is not running", what, i.label, i.p.cfg.Command)
}

// firstStart starts the instance on a fresh port. A port is free when
// picked but another process can take it before the command binds it, so
// a start that fails saying so is retried on another port.
func (i *Instance) firstStart(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		port, err := pickPort()
		if err != nil {
			return fmt.Errorf("cannot find a free port on 127.0.0.1 for target %s: %v", i.label, err)
		}
		i.port = port
		err = i.Restart(ctx)
		if err == nil || !errors.Is(err, errPortTaken) || attempt == portRetries {
			return err
		}
	}
}

// start starts the command once. Callers hold i.mu.
func (i *Instance) start() (*processRun, error) {
	cmd, err := targetCommand(i.p.cfg.Command)
	if err != nil {
		return nil, err
	}
	cmd.Dir = i.p.cfg.Dir
	cmd.Env = append(i.p.env(i.port), MarkEnv+"="+i.mark)
	// Our own pipe rather than exec's copying goroutine: Wait then returns
	// when the command exits, even while a child still holds the pipe.
	pr, pw, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("cannot start target %s %q: %v", i.label, i.p.cfg.Command, err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		_ = pr.Close()
		_ = pw.Close()
		return nil, fmt.Errorf("cannot start target %s %q: %v", i.label, i.p.cfg.Command, err)
	}
	_ = pw.Close()
	r := &processRun{cmd: cmd, exited: make(chan struct{}), pipe: pr, logDone: make(chan struct{}), watched: make(chan struct{})}
	go func() {
		r.waitErr = cmd.Wait()
		close(r.exited)
		i.watch(r)
	}()
	go i.copyOutput(r)
	return r, nil
}

// waitReady probes until the instance is ready. On any failure it kills
// the run before returning, so nothing is left of a start that failed.
func (i *Instance) waitReady(ctx context.Context, r *processRun) error {
	timeout := time.NewTimer(i.p.cfg.ReadyTimeout)
	defer timeout.Stop()
	var noRouteSince time.Time
	for {
		select {
		case <-r.exited:
			return i.failStart(r, nil)
		default:
		}
		ready, seen, noRoute := i.p.probe(ctx, i.port)
		switch {
		case !noRoute:
			noRouteSince = time.Time{}
		case noRouteSince.IsZero():
			noRouteSince = time.Now()
		case time.Since(noRouteSince) >= min(processMissingRouteGrace, i.p.cfg.ReadyTimeout):
			// The fix names its setting (Ready) for each caller to say in
			// its words: --ready for the command.
			ready := idemcheck.Field("Ready")
			hint := idemcheck.Fieldf(idemcheck.ExitUnavailable, ready, "give %s PATH, a path that answers 2xx once it serves, or %s tcp to wait only until its port accepts connections", ready, ready)
			err := fmt.Errorf("target %s %q is up but has no readiness route: %s for %v: %w",
				i.label, i.p.cfg.Command, oneLine(seen), min(processMissingRouteGrace, i.p.cfg.ReadyTimeout), hint)
			return i.failStart(r, err)
		}
		if ready {
			// Something answered; make sure it was not another process on
			// a port ours failed to bind. From here on an end of the run
			// that the harness did not cause is an Exit.
			if !r.markReady() {
				return i.failStart(r, nil)
			}
			return nil
		}
		select {
		case <-r.exited:
			return i.failStart(r, nil)
		case <-ctx.Done():
			return i.failStart(r, fmt.Errorf("start of target %s %q was cancelled: %w", i.label, i.p.cfg.Command, context.Cause(ctx)))
		case <-i.p.closing:
			return i.failStart(r, fmt.Errorf("target %s %q was closed while starting", i.label, i.p.cfg.Command))
		case <-timeout.C:
			err := fmt.Errorf("target %s %q was not ready after %v: %s", i.label, i.p.cfg.Command, i.p.cfg.ReadyTimeout, oneLine(seen))
			return i.failStart(r, err)
		case <-time.After(processReadyPoll):
		}
	}
}

// failStart kills a start that did not become ready and returns err, or,
// when err is nil, the error of a command that exited on its own. That
// one is built after the output is drained, so it quotes the real last line.
func (i *Instance) failStart(r *processRun, err error) error {
	i.mu.Lock()
	r.kill()
	i.mu.Unlock()
	if err != nil {
		if last := r.out.lastLine(); last != noOutput {
			return fmt.Errorf("%w; last output: %s", err, last)
		}
		return err
	}
	if i.p.closed.Load() {
		// Close killed it: that, not the command, ended the start.
		return fmt.Errorf("target %s %q was closed while starting", i.label, i.p.cfg.Command)
	}
	status := "exit status 0"
	if r.waitErr != nil {
		status = r.waitErr.Error()
	}
	msg := fmt.Sprintf("target %s %q exited before it was ready (%s): %s", i.label, i.p.cfg.Command, status, r.out.lastLine())
	if r.out.sawPortTaken() {
		return &portTakenError{msg}
	}
	return errors.New(msg)
}

// stop is the graceful stop Close performs on one instance.
func (i *Instance) stop() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	r := i.cur
	if r == nil || r.groupKilled {
		return nil
	}
	pid := r.cmd.Process.Pid
	r.markDeliberate()
	// A stopped process acts on SIGTERM only once continued.
	err := errors.Join(signalGroup(pid, sigCont), signalGroup(pid, sigTerm))
	grace, cancel := context.WithTimeout(context.Background(), processStopGrace)
	defer cancel()
	// The leader is often only the shell; the server is its child and may
	// still be finishing requests, so wait for the output pipe too: it
	// closes when the last process writing to it exits.
	select {
	case <-r.exited:
	case <-grace.Done():
	}
	select {
	case <-r.logDone:
	case <-grace.Done():
	}
	r.kill()
	// Nothing the target started outlives idemcheck.
	return errors.Join(err, i.confirmDead())
}

// kill sends SIGKILL to the run's process group (once), waits until the
// leader has been reaped and collects the last output. Callers hold the
// instance's mu.
func (r *processRun) kill() {
	r.markDeliberate()
	if !r.groupKilled {
		select {
		case <-r.exited:
		default:
			// The leader is not reaped, so no pid in its tree was reused:
			// its descendants that left the group (setsid) die with it.
			for _, pid := range treeOf(r.cmd.Process.Pid) {
				killPID(pid)
			}
		}
		killGroup(r.cmd.Process)
		r.groupKilled = true
	}
	<-r.exited
	select {
	case <-r.logDone:
	case <-time.After(processDrainTimeout):
		// A process outside the group still holds the pipe; closing our
		// end ends the reader, and that process gets EPIPE on its next write.
		_ = r.pipe.Close()
		<-r.logDone
	}
}

// markReady records that the run passed its readiness probe, unless it has
// already ended; it reports whether it had not.
func (r *processRun) markReady() bool {
	r.life.Lock()
	defer r.life.Unlock()
	if r.life.ended {
		return false
	}
	r.life.ready = true
	return true
}

// markDeliberate records that the harness is ending the run, before it
// sends the signal that does.
func (r *processRun) markDeliberate() {
	r.life.Lock()
	r.life.deliberate = true
	r.life.Unlock()
}

// watch runs once the run's leader has been reaped. An end the harness did
// not cause, of a run that had got ready, becomes an Exit with the run's
// last output, read once every writer of the output is gone (or, when a
// process outside the group holds the pipe, after a bounded wait).
func (i *Instance) watch(r *processRun) {
	defer close(r.watched)
	r.life.Lock()
	r.life.ended = true
	unexpected := r.life.ready && !r.life.deliberate
	r.life.Unlock()
	if !unexpected {
		return
	}
	t := time.NewTimer(processDrainTimeout)
	select {
	case <-r.logDone:
	case <-t.C:
	}
	t.Stop()
	status := "exit status 0"
	if r.waitErr != nil {
		status = r.waitErr.Error()
	}
	e := Exit{Instance: i.index, Label: i.label, Status: status, Tail: r.out.tail(), Time: time.Now()}
	i.p.exitMu.Lock()
	i.p.exits = append(i.p.exits, e)
	i.p.exitMu.Unlock()
}

// settle waits until the instance shows it runs, or its current run has
// ended and been watched, or the settle bound passes.
func (i *Instance) settle(ctx context.Context) {
	deadline := time.Now().Add(processSettleTimeout)
	for {
		i.mu.Lock()
		r := i.cur
		i.mu.Unlock()
		if r == nil {
			return
		}
		select {
		case <-r.watched:
			return
		default:
		}
		if i.p.cfg.Ready == ReadyTCP && serving(ctx, i.port, "") || i.p.cfg.Ready != ReadyTCP && serving(ctx, i.port, i.p.cfg.Ready) {
			return
		}
		if !time.Now().Before(deadline) {
			return
		}
		t := time.NewTimer(processSettlePoll)
		select {
		case <-r.watched:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		if ctx.Err() != nil {
			return
		}
	}
}

// serving reports whether a process runs code behind 127.0.0.1:port: it
// answers GET path with any HTTP reply, or (with path empty, or when it
// answers nothing) it keeps a new connection open rather than refusing or
// resetting it. A process in the middle of exiting may still have its
// listening socket, since the kernel releases a dying process's sockets in
// no useful order, so a connection it accepts is reset moments later; it
// never answers.
func serving(ctx context.Context, port int, path string) bool {
	ctx, cancel := context.WithTimeout(ctx, processProbeTimeout)
	defer cancel()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	if path != "" {
		_, _ = fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path, addr)
	}
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(dl)
	}
	var b [1]byte
	_, err = conn.Read(b[:])
	if err == nil {
		return true // it answered: it runs
	}
	// Held without an answer until the probe's bound: a slow or stuck
	// process, but not a dying one, whose connections are reset.
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
