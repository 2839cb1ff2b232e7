package bench

import (
	"bufio"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"time"
)

// RunRaceTargetProcess is the body of a race target's own process: it
// serves NewRaceTarget(hold) on addr (loopback only), over TLS with a
// certificate of its own (SelfSignedTLS, made at start) when tlsOn, else
// over HTTP/1.1 and h2c (Serve); prints the address it listens on as its
// first line, and ends when its parent closes stdin (or dies), and after
// an hour at the latest. A benchmark command calls it when started with
// its -serve flag (TargetFlags.ServeIfAsked does).
func RunRaceTargetProcess(addr string, hold time.Duration, tlsOn bool) error {
	var cfg *tls.Config
	if tlsOn {
		var err error
		if cfg, err = SelfSignedTLS(); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	if !ln.Addr().(*net.TCPAddr).IP.IsLoopback() {
		return fmt.Errorf("the race target listens on loopback only, not %s", ln.Addr())
	}
	fmt.Println(ln.Addr())
	go func() {
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	time.AfterFunc(time.Hour, func() { os.Exit(0) })
	if cfg != nil {
		return ServeTLS(ln, NewRaceTarget(hold), cfg)
	}
	return Serve(ln, NewRaceTarget(hold))
}

// TargetFlags are the flags by which StartRaceTargetProcess starts a
// benchmark command again as a race target: -serve ADDR, -hold D and, for
// a target over TLS, -serve-tls. Hold is the command's own setting too:
// how long its race targets hold their replies.
type TargetFlags struct {
	serve    string
	serveTLS bool
	Hold     time.Duration
}

// Define defines -serve, -serve-tls and -hold (default hold, described by
// holdUsage) on the command line's flag set.
func (f *TargetFlags) Define(hold time.Duration, holdUsage string) {
	flag.StringVar(&f.serve, "serve", "", "serve a race target on this address, print the address, and exit when stdin closes")
	flag.BoolVar(&f.serveTLS, "serve-tls", false, "with -serve: serve over TLS (h2 and http/1.1 by ALPN) with a self-signed certificate made at start")
	flag.DurationVar(&f.Hold, "hold", hold, holdUsage)
}

// ServeIfAsked is called after flag.Parse. When the command was started
// with -serve, the process is a race target's: it serves
// (RunRaceTargetProcess) and exits, with status 1 and its error on stderr
// after "cmd:" when it fails. Without -serve it returns at once.
func (f *TargetFlags) ServeIfAsked(cmd string) {
	if f.serve == "" {
		return
	}
	if err := RunRaceTargetProcess(f.serve, f.Hold, f.serveTLS); err != nil {
		fmt.Fprintln(os.Stderr, cmd+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// StartRaceTargetProcess runs a race target in a child process of its own,
// so that its scheduler and garbage collector are not the drivers': the
// running executable again, with -serve 127.0.0.1:0 -hold HOLD, which must
// then serve it (TargetFlags). It returns the target's address and what
// stops it.
func StartRaceTargetProcess(hold time.Duration) (addr string, stop func(), err error) {
	return startRaceTargetProcess(hold, false)
}

// StartRaceTargetProcessTLS is StartRaceTargetProcess for a target that
// serves TLS (-serve-tls): h2 or HTTP/1.1 by ALPN, behind a self-signed
// certificate (InsecureTLS trusts it).
func StartRaceTargetProcessTLS(hold time.Duration) (addr string, stop func(), err error) {
	return startRaceTargetProcess(hold, true)
}

func startRaceTargetProcess(hold time.Duration, tlsOn bool) (addr string, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return "", nil, err
	}
	args := []string{"-serve", "127.0.0.1:0", "-hold", hold.String()}
	if tlsOn {
		args = append(args, "-serve-tls")
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return "", nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	stop = func() {
		stdin.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return "", nil, fmt.Errorf("the race target did not start: %w", err)
	}
	return strings.TrimSpace(line), stop, nil
}
