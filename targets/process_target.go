package targets

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/faults"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/targets/provider"
)

// ProcessTarget is a target idemcheck started itself: its process (one or
// more instances), its database, and the database link between them, which
// runs through an in-process fault proxy.
type ProcessTarget struct {
	URL *url.URL
	// DB is the database the target uses, reached directly (not through the
	// fault proxy): effects are counted here.
	DB      *Database
	Process *Process
	// Providers are the downstream doubles handed to the target
	// (ProcessOptions.Providers), in the order named.
	Providers Providers
	link      *faults.Link
}

// ProcessOptions say how to start a process target.
type ProcessOptions struct {
	Command   string
	Instances int
	// DSN is the database to hand the target; empty starts a throwaway
	// PostgreSQL (or, with Engine EngineMySQL, MariaDB) from the local
	// binaries.
	DSN string
	// Engine is the engine of the database to start when DSN is empty:
	// EnginePostgres (empty) or EngineMySQL. Either is handed to the
	// target through a database link that reads its protocol, so every
	// check that faults the link runs on both.
	Engine string
	Env    []string
	Logs   io.Writer
	// AllowRemote lets DSN name a database off loopback (--allow-remote).
	AllowRemote bool
	// Providers names the variables that hand the target the base URLs
	// of downstream doubles idemcheck serves for it (package provider),
	// one double each: PROVIDER_URL, say.
	Providers []string
	// Ready is the readiness probe (ProcessConfig.Ready): an HTTP path
	// that answers 2xx once the target serves, or ReadyTCP; empty is
	// DefaultProcessReady.
	Ready string
}

// StartProcessTarget provides the database, puts a fault proxy on the
// target's link to it, and starts the target with PORT and DATABASE_URL.
// Close undoes all of it, also after a failed start.
func StartProcessTarget(ctx context.Context, o ProcessOptions) (_ *ProcessTarget, err error) {
	pt := &ProcessTarget{}
	defer func() {
		if err != nil {
			pt.Close()
		}
	}()
	if err := CheckDSN(o.DSN, "DSN", o.AllowRemote); err != nil {
		return nil, err
	}
	mysqlTarget := MySQLFamily(o.Engine, o.DSN)
	switch {
	case o.AllowRemote && o.DSN != "":
		pt.DB, err = OpenRemoteDatabase(ctx, o.DSN)
	case mysqlTarget:
		pt.DB, err = ProvideMySQLDatabase(ctx, o.DSN)
	default:
		pt.DB, err = ProvideDatabase(ctx, o.DSN)
	}
	if err != nil {
		return nil, idemcheck.Unavailablef("%w", err)
	}
	var targetDSN string
	env := o.Env
	if mysqlTarget {
		var goDSN string
		if pt.link, targetDSN, goDSN, err = proxyMySQLDatabase(ctx, pt.DB, o.AllowRemote); err != nil {
			return nil, err
		}
		env = append(slices.Clone(env), "MYSQL_DSN="+goDSN)
	} else if pt.link, targetDSN, err = proxyDatabase(ctx, pt.DB, o.AllowRemote); err != nil {
		return nil, err
	}
	if len(o.Providers) > 0 {
		var penv []string
		if err := CheckProviderEnv(o.Providers); err != nil {
			return nil, idemcheck.Fieldf(idemcheck.ExitUsage, "Providers", "%s %v", idemcheck.Field("Providers"), err)
		}
		if pt.Providers, penv, err = StartProviders(o.Providers); err != nil {
			return nil, idemcheck.Unavailablef("%v", err)
		}
		env = append(slices.Clone(env), penv...)
	}
	pt.Process, err = StartProcess(ctx, ProcessConfig{
		Command: o.Command, Instances: o.Instances, DatabaseURL: targetDSN, Env: env, Logs: o.Logs, Ready: o.Ready,
	})
	if err != nil {
		return nil, idemcheck.Fieldf(idemcheck.ExitUnavailable, "Command", "%s: %v", idemcheck.Field("Command"), err)
	}
	pt.URL = pt.Process.URL()
	return pt, nil
}

// proxyDatabase puts a fault proxy in front of db and returns it with the
// DSN to hand the target: the same database, reached through the proxy's
// watched address, so each check can arm its fault on the target's link.
//
// The proxy is handed the address that was checked and reached
// (netguard.Pin), not the DSN's host name, so no resolver can move the
// target's database link off loopback.
func proxyDatabase(ctx context.Context, db *Database, allowRemote bool) (*faults.Link, string, error) {
	cfg, err := pgconn.ParseConfig(db.DSN)
	if err != nil {
		return nil, "", idemcheck.Usagef("database %s: %v", RedactDSN(db.DSN), err)
	}
	if strings.HasPrefix(cfg.Host, "/") {
		// The fault proxy, and so the target, reach the database over TCP.
		return nil, "", idemcheck.Usagef("database %s is on a Unix socket: give a DSN with a TCP host, such as host=127.0.0.1", RedactDSN(db.DSN))
	}
	link, addr, err := watchDatabase(ctx, db, net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))), faults.EnginePostgres, allowRemote)
	if err != nil {
		return nil, "", err
	}
	dsn, err := faults.RewriteDSN(db.DSN, addr)
	if err != nil {
		_ = link.Close()
		return nil, "", idemcheck.Unavailablef("database link: %v", err)
	}
	return link, dsn, nil
}

// proxyMySQLDatabase is proxyDatabase for a MySQL-family database: the
// link reads the MySQL protocol, and the target is handed the database
// through it in both forms (MySQLDSNs: DATABASE_URL's URL, MYSQL_DSN's Go
// form), without the DSN's parameters.
func proxyMySQLDatabase(ctx context.Context, db *Database, allowRemote bool) (_ *faults.Link, urlForm, goForm string, err error) {
	cfg, err := mysqlConfig(db.DSN)
	if err == nil && cfg.Net == "unix" {
		err = errors.New("it is on a Unix socket: give a DSN with a TCP host, such as mysql://user@127.0.0.1:3306/db")
	}
	if err != nil {
		return nil, "", "", idemcheck.Usagef("database %s: %v", RedactDSN(db.DSN), err)
	}
	link, addr, err := watchDatabase(ctx, db, cfg.Addr, faults.EngineMySQL, allowRemote)
	if err != nil {
		return nil, "", "", err
	}
	urlForm, goForm = MySQLDSNs(cfg.User, cfg.Passwd, addr, cfg.DBName)
	if cfg.Passwd == "" {
		urlForm = strings.Replace(urlForm, cfg.User+":@", cfg.User+"@", 1)
		goForm = strings.Replace(goForm, cfg.User+":@", cfg.User+"@", 1)
	}
	return link, urlForm, goForm, nil
}

// watchDatabase puts a database Link of engine in front of hostport, the
// database's server, pinned to the address that was checked and reached,
// and returns it with its watched proxy's address.
func watchDatabase(ctx context.Context, db *Database, hostport, engine string, allowRemote bool) (*faults.Link, string, error) {
	upstream, err := netguard.Pin(ctx, hostport, allowRemote, 3*time.Second)
	if err != nil {
		if errors.Is(err, netguard.ErrNotLoopback) {
			return nil, "", idemcheck.Fieldf(idemcheck.ExitUsage, "DSN", "%s %s: %v; %s to use a database off this machine", idemcheck.Field("DSN"), RedactDSN(db.DSN), err, idemcheck.Setting("AllowRemote"))
		}
		return nil, "", idemcheck.Unavailablef("database %s: %v", RedactDSN(db.DSN), err)
	}
	link, err := faults.NewDBLink(upstream, faults.WithEngine(engine))
	if err != nil {
		return nil, "", idemcheck.Unavailablef("database link: %v", err)
	}
	addr, err := link.WatchedAddr()
	if err != nil {
		_ = link.Close()
		return nil, "", idemcheck.Unavailablef("database link: %v", err)
	}
	return link, addr, nil
}

// NoLinkReason is why the database-link checks are skipped for Powers
// without a database link.
const NoLinkReason = "idemcheck put no fault proxy in front of the target's database"

// NoDBLink is Powers over a target whose database link idemcheck cannot
// fault: NoDBLink says why, "" when it can. The checks that fault the
// link are then skipped with that reason, and bursts are timed.
type NoDBLink interface {
	NoDBLink() string
}

// NoDBLink says why the target's database link cannot be faulted: there
// is none (NoLinkReason); "" when there is, on PostgreSQL as on MySQL.
func (p linkPowers) NoDBLink() string {
	if p.link == nil {
		return NoLinkReason
	}
	return ""
}

// Replicas is how many instances of the target run.
func (pt *ProcessTarget) Replicas() int { return len(pt.Process.Instances()) }

// Powers are the harness's hold on the target, for the fault checks.
func (pt *ProcessTarget) Powers() *ProcessPowers {
	return &ProcessPowers{linkPowers: linkPowers{link: pt.link, db: pt.DB}, pt: pt}
}

// Close stops the target, the proxy and a throwaway database; it is safe
// on a partly started target and more than once.
func (pt *ProcessTarget) Close() {
	if pt == nil {
		return
	}
	if pt.Process != nil {
		_ = pt.Process.Close()
	}
	if pt.link != nil {
		_ = pt.link.Close()
	}
	_ = pt.Providers.Close()
	if pt.DB != nil {
		pt.DB.Close()
	}
}

// linkPowers are the powers over a target's database link, alike for a
// process and a container: ArmDB, Barrier and Held.
type linkPowers struct {
	link *faults.Link
	db   *Database
}

// ArmDB puts a fault on the target's database link, on the writes of
// transactions carrying one of carrying if given; disarm reports where it
// landed (see faults.Link.Arm).
func (p linkPowers) ArmDB(f faults.Fault, carrying ...[]byte) (func() faults.Landing, error) {
	if p.link == nil {
		return nil, errors.New(NoLinkReason)
	}
	return p.link.Arm(f, carrying...)
}

// Barrier arms a write barrier on the target's database link for a burst
// (see faults.Link.Barrier and Scheduler).
func (p linkPowers) Barrier(attempts int, inTurn bool) (func() faults.Schedule, error) {
	if p.link == nil {
		return nil, errors.New(NoLinkReason)
	}
	return p.link.Barrier(faults.BarrierOptions{Attempts: attempts, Sessions: sessions(p.db), InTurn: inTurn})
}

// ProviderCalls takes the calls the target made to its doubles (see
// Downstream).
func (p *ProcessPowers) ProviderCalls() []idemcheck.ProviderCall { return p.pt.Providers.Calls() }

// ArmProvider faults the next call to each double (see Downstream).
func (p *ProcessPowers) ArmProvider(f provider.Fault) func() bool { return p.pt.Providers.Arm(f) }

// ProviderNames names the target's doubles (see Downstream).
func (p *ProcessPowers) ProviderNames() []string { return p.pt.Providers.Names() }

// DBLinkFaults reports whether a session of the database's engine has
// come through the target's database link (see DBLinkReporter): with none
// once the target was ready and had answered, its database traffic goes
// elsewhere, or the link could not follow it (Refused: TLS, say).
func (p linkPowers) DBLinkFaults() (bool, string) {
	if why := p.NoDBLink(); why != "" {
		return false, why
	}
	if p.link.DBSessions() > 0 {
		return true, ""
	}
	engine := "PostgreSQL"
	if p.link.Engine() == faults.EngineMySQL {
		engine = "MySQL"
	}
	if why := p.link.Refused(); why != "" {
		return false, fmt.Sprintf("no %s session came through the database link idemcheck handed the target (DATABASE_URL): the link refused its connections: %s", engine, why)
	}
	return false, fmt.Sprintf("no %s session came through the database link idemcheck handed the target (DATABASE_URL) by the time it was ready and answering: "+
		"its database is not %s, or it connects to it without DATABASE_URL", engine, engine)
}

// Held delivers the hold events of db-hold faults.
func (p linkPowers) Held() <-chan faults.HoldEvent {
	if p.link == nil {
		return nil
	}
	return p.link.Held()
}

// ProcessPowers implements Powers for a process target: its database link
// (ArmDB, Barrier, Held) and its instances (Kill, Restart, …).
type ProcessPowers struct {
	linkPowers
	pt *ProcessTarget
}

// Kill crashes every instance of the target at once (Process.Kill).
func (p *ProcessPowers) Kill() error { return p.pt.Process.Kill() }

// Restart starts every instance again on its port and waits until ready.
func (p *ProcessPowers) Restart(ctx context.Context) error {
	for i, in := range p.pt.Process.Instances() {
		if err := in.Restart(ctx); err != nil {
			return fmt.Errorf("instance %d: %w", i, err)
		}
	}
	return nil
}

// Exits reports the instances that exited without the harness asking
// since the last call; with settle, it first waits for a dying instance to
// be gone (see Process.Settle).
func (p *ProcessPowers) Exits(ctx context.Context, settle bool) ([]idemcheck.Event, error) {
	if settle {
		p.pt.Process.Settle(ctx)
	}
	return exitEvents(p.pt.Process.Exits()), nil
}

// Revive restarts instance i if it is down.
func (p *ProcessPowers) Revive(ctx context.Context, i int) (bool, error) {
	insts := p.pt.Process.Instances()
	if i < 0 || i >= len(insts) {
		return false, fmt.Errorf("no instance %d: the target has %d", i, len(insts))
	}
	return insts[i].Revive(ctx)
}

// sessions reads the database's sessions for a write barrier
// (faults.SessionsQuery): how many wait on a lock (a handler that locks
// before it writes makes the other attempts of a burst wait there) and how
// many are at work, so the held writes go at once when nothing else can
// reach a write. It reads pg_stat_activity, or on MySQL and MariaDB
// information_schema.PROCESSLIST (faults.MySQLSessions), nothing
// being written, through the pool that counts effects, which reaches the
// database directly, never through the target's link.
func sessions(db *Database) func(ctx context.Context) (faults.Sessions, error) {
	if db == nil {
		return nil
	}
	if m := db.SQL; m != nil {
		return func(ctx context.Context) (faults.Sessions, error) { return faults.MySQLSessions(ctx, m.DB()) }
	}
	if db.Pool == nil {
		return nil
	}
	return func(ctx context.Context) (faults.Sessions, error) {
		var s faults.Sessions
		err := db.Pool.QueryRow(ctx, faults.SessionsQuery).Scan(&s.Waiting, &s.Working)
		return s, err
	}
}

// exitEvents turns the targets' exits into history events.
func exitEvents(exits []Exit) []idemcheck.Event {
	var evs []idemcheck.Event
	for _, e := range exits {
		evs = append(evs, idemcheck.Event{
			Kind: idemcheck.TargetExited, Time: e.Time, Instance: e.Instance,
			ExitStatus: e.Status, LogTail: e.Tail,
			Detail: fmt.Sprintf("target %s exited on its own (%s)", e.Label, e.Status),
		})
	}
	return evs
}
