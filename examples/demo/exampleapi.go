package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/serve"
	"github.com/idemcheck/idemcheck/targets"
)

// exampleAPIReady ends what example-api prints once it serves: a
// background start reads up to this line and then lets the server go.
const exampleAPIReady = "# the example orders API is ready"

// exampleAPILogEnv names, for a server started by --background, the log
// file its output goes to: the server removes it when it stops cleanly
// (kill "$EXAMPLE_PID", Ctrl-C), as it removes its database, so that a
// stopped example leaves nothing behind. A server that fails keeps it.
const exampleAPILogEnv = "IDEMCHECK_EXAMPLE_API_LOG"

// runExampleAPI serves the example orders API (examples/orders) on a
// loopback port with a throwaway PostgreSQL, so that a newcomer has an API
// and a database to certify by --url and --db before pointing idemcheck
// at their own. It prints shell lines that set EXAMPLE_URL, EXAMPLE_DB
// and EXAMPLE_PID (not DATABASE_URL: in the reader's shell it would
// outlive the API and lead later commands to a database that is gone);
// with --background it returns once the API is ready and
// leaves it running until `kill "$EXAMPLE_PID"`, which also stops and
// removes the database.
func runExampleAPI(ctx context.Context, args []string, stdout, stderr io.Writer) (int, error) {
	fs := flag.NewFlagSet("example-api", flag.ContinueOnError)
	port := fs.Int("port", 0, "loopback `port` to serve on (0: a free one, printed)")
	variant := fs.String("variant", "reference", "the example's variant: reference, or one of the bug zoo's (such as check-then-insert)")
	background := fs.Bool("background", false, "start in the background and return once it serves, printing the lines for eval; stop it with kill \"$EXAMPLE_PID\"")
	if err := parseFlags(fs, args, stdout); err != nil {
		return 0, err
	}
	if *port < 0 || *port > 65535 {
		return 0, idemcheck.Usagef("--port %d is out of range: use 1 to 65535, or 0 for a free port", *port)
	}
	v, err := orders.ParseVariant(*variant)
	if err != nil {
		return 0, idemcheck.Usagef("--variant: %v", err)
	}
	if *background {
		return startExampleAPIBackground(ctx, *port, *variant, stdout)
	}

	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(*port)))
	if err != nil {
		return 0, idemcheck.Unavailablef("example-api: cannot listen on 127.0.0.1:%d: %v: pick another --port, or 0 for a free one", *port, err)
	}
	defer ln.Close()
	pg, err := targets.StartLocalPostgres(ctx)
	if err != nil {
		return 0, idemcheck.Unavailablef("example-api: %v", err)
	}
	defer pg.Close()
	dsn, err := pg.CreateDatabase(ctx, "orders")
	if err != nil {
		return 0, idemcheck.Unavailablef("example-api: %v", err)
	}
	cfg, err := serve.PoolConfig(dsn)
	if err != nil {
		return 0, idemcheck.Unavailablef("example-api: %v", err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return 0, idemcheck.Unavailablef("example-api: %v", err)
	}
	defer pool.Close()
	if err := orders.Migrate(ctx, pool); err != nil {
		return 0, idemcheck.Unavailablef("example-api: %v", err)
	}
	api := orders.New(pool, orders.Config{Variant: v, Lease: 30 * time.Second, SweepEvery: time.Minute})
	defer api.Close()

	fmt.Fprintf(stdout, "export EXAMPLE_URL=http://%s\nexport EXAMPLE_DB=%s\nexport EXAMPLE_PID=%d\n%s (POST /orders, POST /payments); kill \"$EXAMPLE_PID\" stops it and removes its database\n",
		ln.Addr(), shellQuote(dsn), os.Getpid(), exampleAPIReady)
	if f, ok := stdout.(*os.File); ok {
		_ = f.Sync()
	}
	fmt.Fprintf(stderr, "example-api: serving the %s orders API on http://%s, database %s; Ctrl-C or kill %d stops both\n",
		v, ln.Addr(), targets.RedactDSN(dsn), os.Getpid())
	if err := serve.HTTP(ctx, ln, api, 5*time.Second); err != nil && ctx.Err() == nil {
		return 0, idemcheck.Unavailablef("example-api: %v", err)
	}
	fmt.Fprintln(stderr, "example-api: stopped; its database is removed")
	if log := os.Getenv(exampleAPILogEnv); log != "" && strings.HasPrefix(filepath.Base(log), "idemcheck-example-api-") {
		_ = os.Remove(log)
	}
	return idemcheck.ExitHeld, nil
}

// startExampleAPIBackground starts example-api again as a process of its
// own session (so a closed terminal does not end it), its output in a log
// file that it removes when it stops (exampleAPILogEnv), and copies the
// lines it prints once ready. Its stdout is a pipe
// that is closed when this process exits, so the server prints nothing
// more to it after the ready line.
func startExampleAPIBackground(ctx context.Context, port int, variant string, stdout io.Writer) (int, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, idemcheck.Unavailablef("example-api: cannot find its own binary: %v", err)
	}
	logFile, err := os.CreateTemp("", "idemcheck-example-api-*.log")
	if err != nil {
		return 0, idemcheck.Unavailablef("example-api: cannot create its log file: %v", err)
	}
	defer logFile.Close()
	cmd := exec.Command(self, "example-api", "--port", strconv.Itoa(port), "--variant", variant)
	cmd.Stderr = logFile
	cmd.Env = append(os.Environ(), exampleAPILogEnv+"="+logFile.Name())
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, idemcheck.Unavailablef("example-api: %v", err)
	}
	if err := cmd.Start(); err != nil {
		return 0, idemcheck.Unavailablef("example-api: cannot start %s: %v", self, err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
			if strings.HasPrefix(sc.Text(), exampleAPIReady) {
				return
			}
		}
	}()
	var got []string
	for {
		select {
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return 0, idemcheck.Unavailablef("example-api: interrupted before the API was ready")
		case l, ok := <-lines:
			if !ok {
				_ = cmd.Wait()
				return 0, idemcheck.Unavailablef("example-api: the server stopped before it was ready; its log, %s: %s", logFile.Name(), lastLine(logFile.Name()))
			}
			got = append(got, l)
			if strings.HasPrefix(l, exampleAPIReady) {
				fmt.Fprintf(stdout, "%s\n# its log: %s (removed when it stops)\n", strings.Join(got, "\n"), logFile.Name())
				// The server runs on; this process does not wait for it.
				_ = cmd.Process.Release()
				return idemcheck.ExitHeld, nil
			}
		}
	}
}

// lastLine is a file's last non-empty line, for an error message.
func lastLine(path string) string {
	b, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		return "(unreadable)"
	}
	ls := strings.Split(strings.TrimSpace(string(b)), "\n")
	return ls[len(ls)-1]
}

// shellQuote quotes s for a POSIX shell's eval.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
