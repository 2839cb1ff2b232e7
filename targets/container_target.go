package targets

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/targets/provider"
)

// ContainerTarget is a target idemcheck started from an image: its
// container, its database, and the database link between them, which runs
// through an in-process fault proxy. It is ProcessTarget for images, so the
// fault checks (failed-attempt, crash-lease, lease-fencing) run on the very
// image a pipeline ships.
type ContainerTarget struct {
	URL *url.URL
	// DB is the database the container uses, reached directly (not through
	// the fault proxy): effects are counted here, so an armed fault never
	// touches the count.
	DB        *Database
	Container *Container
	// Providers are the downstream doubles handed to the container
	// (ContainerOptions.Providers); it reaches them on the host's network.
	Providers Providers
	link      *faults.Link
	output    io.Writer
}

// ContainerOptions say how to start a container target.
type ContainerOptions struct {
	// Image is the target's image. It must be on the Docker host already:
	// idemcheck never pulls.
	Image string
	// DBImage is the database image started for the target's database
	// when DSN is empty (default DefaultPostgresImage, or
	// DefaultMariaDBImage when the database is of the MySQL family).
	DBImage string
	// Engine is the engine of the database to start when DSN is empty:
	// EnginePostgres (empty) or EngineMySQL, as ProcessOptions.Engine.
	Engine string
	// DSN is the database to hand the target; empty provides one with
	// ProvideDatabaseWith: a PostgreSQL container, else a throwaway
	// PostgreSQL from the local binaries; for EngineMySQL, with
	// ProvideMySQLDatabaseWith: a MariaDB container, else a throwaway
	// MariaDB from the local binaries.
	DSN string
	// Env holds extra variables for the container, such as ORDERS_VARIANT.
	// PORT, ADDR and DATABASE_URL are idemcheck's (see ParseEnv).
	Env map[string]string
	// Ready is the path that answers 2xx once the target serves (default
	// DefaultContainerReady).
	Ready string
	// Log receives one line for each fallback the database provider takes,
	// with its reason. Nil discards them.
	Log io.Writer
	// AllowRemote lets DSN name a database off loopback (--allow-remote).
	AllowRemote bool
	// Output receives the container's whole output (stdout and stderr,
	// across restarts) when Close removes it. Nil discards it.
	Output io.Writer
	// Providers names the variables that hand the container the base
	// URLs of downstream doubles (see ProcessOptions.Providers).
	Providers []string
}

// killTimeout bounds a crash of the container. Powers.Kill takes
// no context, and a stuck engine must not hang the run.
const killTimeout = 30 * time.Second

// StartContainerTarget provides the database, puts a fault proxy on the
// target's link to it, and starts the image on host networking with PORT,
// ADDR=127.0.0.1 and DATABASE_URL naming the proxy, so the container's
// database traffic crosses the faults the checks arm. A database of the
// MySQL family (Engine EngineMySQL, or a MySQL DSN) is a MariaDB container
// instead (ProvideMySQLDatabaseWith), handed over through a link that reads
// the MySQL protocol in DATABASE_URL and MYSQL_DSN, as to a command. It
// returns once the readiness path answers 2xx. Close undoes all of it;
// after a failed start everything started so far is already undone.
//
// The error wraps ErrNoDocker when no engine answers and
// ErrNoImage when the image is missing, so a caller can tell a
// machine that cannot run containers from a target that failed.
func StartContainerTarget(ctx context.Context, o ContainerOptions) (_ *ContainerTarget, err error) {
	if o.Image == "" {
		return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "Image", "%s: no image given", idemcheck.Field("Image"))
	}
	ct := &ContainerTarget{output: o.Output}
	defer func() {
		if err != nil {
			_ = ct.Close()
		}
	}()
	// Asked first because without an engine the image cannot run at all,
	// and the database provider would otherwise start a local PostgreSQL
	// only to remove it again.
	if err := DockerAvailable(ctx); err != nil {
		return nil, idemcheck.Fieldf(idemcheck.ExitUnavailable, "Image", "%s needs a Docker engine (make docker-setup installs and starts one): %w", idemcheck.Field("Image"), err)
	}
	if err := CheckDSN(o.DSN, "DSN", o.AllowRemote); err != nil {
		return nil, err
	}
	mysqlTarget := MySQLFamily(o.Engine, o.DSN)
	provide := ProvideOptions{DBImage: o.DBImage, Log: logLine(o.Log)}
	switch {
	case o.AllowRemote && o.DSN != "":
		ct.DB, err = OpenRemoteDatabase(ctx, o.DSN)
	case mysqlTarget:
		ct.DB, err = ProvideMySQLDatabaseWith(ctx, o.DSN, provide)
	default:
		ct.DB, err = ProvideDatabaseWith(ctx, o.DSN, provide)
	}
	if err != nil {
		return nil, idemcheck.Unavailablef("%w", err)
	}
	// The proxy listens on 127.0.0.1, which the container reaches because
	// it shares the host's network.
	var targetDSN string
	env := o.Env
	if mysqlTarget {
		var goDSN string
		if ct.link, targetDSN, goDSN, err = proxyMySQLDatabase(ctx, ct.DB, o.AllowRemote); err != nil {
			return nil, err
		}
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		env["MYSQL_DSN"] = goDSN
	} else if ct.link, targetDSN, err = proxyDatabase(ctx, ct.DB, o.AllowRemote); err != nil {
		return nil, err
	}
	if len(o.Providers) > 0 {
		var penv []string
		if err := CheckProviderEnv(o.Providers); err != nil {
			return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "Providers", "%s %v", idemcheck.Field("Providers"), err)
		}
		if ct.Providers, penv, err = StartProviders(o.Providers); err != nil {
			return nil, idemcheck.Unavailablef("%v", err)
		}
		env = maps.Clone(env)
		if env == nil {
			env = map[string]string{}
		}
		for _, kv := range penv {
			name, value, _ := strings.Cut(kv, "=")
			env[name] = value
		}
	}
	ct.Container, err = StartContainer(ctx, ContainerConfig{
		Image: o.Image, Env: env, DatabaseURL: targetDSN, Ready: o.Ready,
	})
	if err != nil {
		return nil, idemcheck.Fieldf(idemcheck.ExitUnavailable, "Image", "%s: %w", idemcheck.Field("Image"), err)
	}
	ct.URL = ct.Container.URL()
	return ct, nil
}

// logLine writes each line of the database provider to w, prefixed the
// way the command's own messages are; nil w discards them.
func logLine(w io.Writer) func(string) {
	if w == nil {
		return nil
	}
	return func(line string) { fmt.Fprintf(w, "idemcheck: %s\n", line) }
}

// Powers are the harness's hold on the target, for the fault checks.
func (ct *ContainerTarget) Powers() *ContainerPowers {
	return &ContainerPowers{linkPowers: linkPowers{link: ct.link, db: ct.DB}, ct: ct}
}

// Close removes the container, stops the proxy and removes a database that
// was started for the run; it is safe on a partly started target and more
// than once. It does its work on contexts of its own, so an interrupted run
// still cleans up. The error, if any, says how to remove the container by
// hand; a later run also removes it, since its owner's pid is gone.
func (ct *ContainerTarget) Close() error {
	if ct == nil {
		return nil
	}
	var err error
	// The container first: it is the database's client, and removing it
	// ends its connections before the proxy and the database go.
	if ct.Container != nil {
		if ct.output != nil {
			ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
			if text, lerr := ct.Container.Logs(ctx); lerr == nil || text != "" {
				_, _ = io.WriteString(ct.output, text)
			}
			cancel()
		}
		err = ct.Container.Close(context.Background())
		ct.Container = nil
	}
	if ct.link != nil {
		_ = ct.link.Close()
		ct.link = nil
	}
	_ = ct.Providers.Close()
	ct.Providers = nil
	if ct.DB != nil {
		ct.DB.Close()
		ct.DB = nil
	}
	return err
}

// ContainerPowers implements Powers for a container target: its database
// link (ArmDB, Barrier, Held) and its container (Kill, Restart, …).
type ContainerPowers struct {
	linkPowers
	ct *ContainerTarget
}

// Kill crashes the target: SIGKILL to every process in the container. It
// returns once the container has stopped, so its port refuses connections.
func (p *ContainerPowers) Kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), killTimeout)
	defer cancel()
	return p.ct.Container.Kill(ctx)
}

// Restart starts the container again on its port, with the same variables
// (so the same proxied database), and waits until it is ready.
func (p *ContainerPowers) Restart(ctx context.Context) error { return p.ct.Container.Restart(ctx) }

// reservedEnv are the variables idemcheck hands every container target:
// it probes and sends traffic on exactly those, so a value given for them
// would be overridden without a word.
var reservedEnv = []string{"PORT", "ADDR", "DATABASE_URL"}

// ParseEnv reads --env values, each NAME=VALUE (the value may be empty or
// hold '='), into a container target's variables; a later value for a name
// wins, as in a shell. PORT, ADDR and DATABASE_URL are refused, because
// idemcheck sets them.
func ParseEnv(list []string) (map[string]string, error) {
	env := make(map[string]string, len(list))
	for _, kv := range list {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || strings.ContainsAny(name, " \t\n") {
			return nil, fmt.Errorf("%q is not NAME=VALUE, such as ORDERS_VARIANT=no-lease", kv)
		}
		for _, r := range reservedEnv {
			if name == r {
				return nil, fmt.Errorf("%s: idemcheck sets PORT, ADDR and DATABASE_URL itself (the port it picked, 127.0.0.1 and the database through its fault proxy)", name)
			}
		}
		env[name] = value
	}
	return env, nil
}

// ProviderCalls takes the calls the container made to its doubles (see
// Downstream).
func (p *ContainerPowers) ProviderCalls() []idemcheck.ProviderCall { return p.ct.Providers.Calls() }

// ArmProvider faults the next call to each double (see Downstream).
func (p *ContainerPowers) ArmProvider(f provider.Fault) func() bool { return p.ct.Providers.Arm(f) }

// ProviderNames names the container's doubles (see Downstream).
func (p *ContainerPowers) ProviderNames() []string { return p.ct.Providers.Names() }

// Exits reports the container's end if it stopped without the harness
// asking since the last call; with settle, it first waits for a dying
// container to be stopped (see Container.Settle).
func (p *ContainerPowers) Exits(ctx context.Context, settle bool) ([]idemcheck.Event, error) {
	if settle {
		p.ct.Container.Settle(ctx)
	}
	exits, err := p.ct.Container.Exits(ctx)
	return exitEvents(exits), err
}

// Revive restarts the container if it is down; a container target is one
// instance, 0.
func (p *ContainerPowers) Revive(ctx context.Context, i int) (bool, error) {
	if i != 0 {
		return false, fmt.Errorf("no instance %d: a container target is one instance", i)
	}
	return p.ct.Container.Revive(ctx)
}
