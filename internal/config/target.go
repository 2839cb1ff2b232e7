package config

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/targets"
)

// Launch is a target for idemcheck to start: a Go handler served on
// loopback, a command run as Instances replicas, or a container image.
type Launch struct {
	Handler   http.Handler
	Command   string
	Instances int
	Image     string
	DBImage   string
	// DBEngine is the engine of the database to start (targets.EngineMySQL
	// or targets.EnginePostgres); empty is PostgreSQL, or the DSN's.
	DBEngine string
	Ready    string
	Env      []string
	// Providers are the variables naming its provider doubles.
	Providers []string
	// DSN is the database handed to the target; empty provides one.
	DSN         string
	AllowRemote bool
	// Log is the file the target's output goes to (Spec.TargetLog).
	Log string
}

// checkTarget checks where the API runs and the settings that go with a
// target idemcheck starts, in this order: the first rule broken is the
// one reported.
func (s Spec) checkTarget() error {
	if err := s.checkWhere(); err != nil {
		return err
	}
	if err := s.checkStartSettings(); err != nil {
		return err
	}
	if err := s.checkInstances(); err != nil {
		return err
	}
	started := s.Command != "" || s.Image != ""
	switch {
	case s.Ready != "" && !strings.HasPrefix(s.Ready, "/") && (s.Ready != targets.ReadyTCP || s.Command == ""):
		// With a command, tcp (its port accepting connections) is a
		// readiness too.
		return usage("Ready", "%s %q must be a path starting with /, such as /healthz (or, with %s, %s: wait until the port accepts connections)",
			idemcheck.Field("Ready"), s.Ready, idemcheck.Field("Command"), targets.ReadyTCP)
	case s.DB != nil && started:
		return usage("DB", "%s goes with %s or %s; a started target's effects are counted in the database idemcheck hands it (%s)",
			idemcheck.Field("DB"), idemcheck.Field("Handler"), idemcheck.Field("URL"), idemcheck.Field("DSN"))
	}
	if err := targets.CheckProviderEnv(s.Providers); err != nil {
		return usage("Providers", "%s %v", idemcheck.Field("Providers"), err)
	}
	for i, kv := range s.Env {
		if _, err := targets.ParseEnv([]string{kv}); err != nil {
			f := idemcheck.Field(fmt.Sprintf("Env[%d]", i))
			return usage(f, "%s %v", f, err)
		}
	}
	return nil
}

// checkWhere checks that the API runs in one place: a Handler, a URL, a
// Command or an Image, exactly one of them.
func (s Spec) checkWhere() error {
	started := s.Command != "" || s.Image != ""
	switch {
	case s.Handler != nil && (s.URL != "" || started):
		return usage("Handler", "give %s alone, not with %s, %s or %s: it is served on loopback for the run", idemcheck.Field("Handler"),
			idemcheck.Field("URL"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case s.Image != "" && (s.URL != "" || s.Command != ""):
		return usage("Image", "give %s alone, not with %s or %s: with %s the URL is the one idemcheck starts the container on",
			idemcheck.Field("Image"), idemcheck.Field("URL"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case s.URL != "" && s.Command != "":
		return usage("Command", "give %s or %s, not both: with %s the URL is the one idemcheck starts the target on",
			idemcheck.Field("URL"), idemcheck.Field("Command"), idemcheck.Field("Command"))
	case s.Handler == nil && s.URL == "" && !started:
		return usage("URL", "%s is required, such as http://127.0.0.1:8080 (or %s or %s, to let idemcheck start the target)",
			idemcheck.Field("URL"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	}
	return nil
}

// checkStartSettings checks the settings that go with a target idemcheck
// starts (its readiness, its database image and engine, its environment,
// its providers, its log): each given only with one, the engine one
// idemcheck starts and one the DSN agrees with.
func (s Spec) checkStartSettings() error {
	started := s.Command != "" || s.Image != ""
	switch {
	case !started && s.Ready != "":
		return usage("Ready", "%s goes with %s or %s: it is how idemcheck knows a target it starts serves", idemcheck.Field("Ready"),
			idemcheck.Field("Command"), idemcheck.Field("Image"))
	case s.Image == "" && s.DBImage != "":
		return usage("DBImage", "%s goes with %s", idemcheck.Field("DBImage"), idemcheck.Field("Image"))
	case s.DBEngine != "" && s.DBEngine != targets.EnginePostgres && s.DBEngine != targets.EngineMySQL && s.DBEngine != "mariadb":
		return usage("DBEngine", "%s %q is not an engine idemcheck starts: use postgres or mysql (a MariaDB server)", idemcheck.Field("DBEngine"), s.DBEngine)
	case s.DBEngine != "" && !started:
		return usage("DBEngine", "%s goes with %s or %s: it is the database idemcheck starts for the target", idemcheck.Field("DBEngine"),
			idemcheck.Field("Command"), idemcheck.Field("Image"))
	case s.DBEngine != "" && s.DSN != "" && dbEngine(s.DBEngine, "") != targets.DSNEngine(s.DSN):
		return usage("DBEngine", "%s %s does not match the database %s, a %s DSN: leave %s out, or give a DSN of its kind",
			idemcheck.Field("DBEngine"), s.DBEngine, targets.RedactDSN(s.DSN), targets.DSNEngine(s.DSN), idemcheck.Field("DBEngine"))
	case !started && len(s.Env) > 0:
		return usage("Env", "%s goes with %s or %s, a target idemcheck starts", idemcheck.Field("Env"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case !started && len(s.Providers) > 0:
		return usage("Providers", "%s goes with %s or %s: idemcheck serves provider doubles for a target it starts, and hands it their URLs",
			idemcheck.Field("Providers"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	case !started && s.TargetLog != "":
		return usage("TargetLog", "%s goes with %s or %s: idemcheck keeps the output of a target it starts",
			idemcheck.Field("TargetLog"), idemcheck.Field("Command"), idemcheck.Field("Image"))
	}
	return nil
}

// checkInstances checks the replicas of a started command: 1 to
// MaxInstances, and only of a command.
func (s Spec) checkInstances() error {
	switch {
	case s.Image != "" && s.Instances > 1:
		return usage("Instances", "%s goes with %s: a container target is one instance", idemcheck.Field("Instances"), idemcheck.Field("Command"))
	case s.Command != "" && (s.Instances < 1 || s.Instances > MaxInstances):
		return usage("Instances", "%s %d is out of range: use 1 to %d", idemcheck.Field("Instances"), s.Instances, MaxInstances)
	case s.Instances > 1 && s.Command == "":
		return usage("Instances", "%s goes with %s: idemcheck runs replicas only of a target it starts", idemcheck.Field("Instances"), idemcheck.Field("Command"))
	}
	return nil
}

// Started is a target Launch started.
type Started struct {
	URL      *url.URL
	Powers   targets.Powers
	Replicas int
	// DB is the database the target was handed; nil for a handler.
	DB   *targets.Database
	stop func() error
}

// Close stops the target and what was started for it.
func (s *Started) Close() error { return s.stop() }

// Start starts the target: serves the handler, or starts the command or
// the image on its database (DSN, else a throwaway one). output receives
// the target's own output, log one line for each fallback the database
// provider takes (nil discards either).
func (l *Launch) Start(ctx context.Context, output, log io.Writer) (*Started, error) {
	switch {
	case l.Handler != nil:
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, idemcheck.Unavailablef("serving the handler on loopback: %v", err)
		}
		srv := &http.Server{Handler: l.Handler, ReadHeaderTimeout: time.Minute}
		go func() { _ = srv.Serve(ln) }()
		return &Started{URL: &url.URL{Scheme: "http", Host: ln.Addr().String()}, stop: srv.Close}, nil
	case l.Image != "":
		env, err := targets.ParseEnv(l.Env)
		if err != nil {
			return nil, usage("Env", "%s %v", idemcheck.Field("Env"), err)
		}
		ct, err := targets.StartContainerTarget(ctx, targets.ContainerOptions{
			Image: l.Image, DBImage: l.DBImage, Engine: l.DBEngine, DSN: l.DSN, Env: env, Ready: l.Ready, Log: log, Output: output,
			AllowRemote: l.AllowRemote, Providers: l.Providers,
		})
		if err != nil {
			return nil, err
		}
		return &Started{URL: ct.URL, Powers: ct.Powers(), Replicas: 1, DB: ct.DB, stop: ct.Close}, nil
	}
	pt, err := targets.StartProcessTarget(ctx, targets.ProcessOptions{Command: l.Command, Instances: l.Instances, DSN: l.DSN, Engine: l.DBEngine, Env: l.Env,
		AllowRemote: l.AllowRemote, Logs: output, Providers: l.Providers, Ready: l.Ready})
	if err != nil {
		return nil, err
	}
	return &Started{URL: pt.URL, Powers: pt.Powers(), Replicas: pt.Replicas(), DB: pt.DB, stop: func() error { pt.Close(); return nil }}, nil
}

// Attach points the certification at a started target: its address, its
// powers, its replicas and, for an effect count in SQL, the database it
// was handed.
func (b *Built) Attach(s *Started) {
	attach(&b.Config.Settings, s)
	b.Config.Replicas = s.Replicas
}

// dbEngine is the engine of a started target's database: the one named
// ("mariadb" is MySQL's family), else the DSN's, else PostgreSQL.
func dbEngine(named, dsn string) string {
	switch {
	case named == "mariadb" || named == targets.EngineMySQL:
		return targets.EngineMySQL
	case named != "":
		return named
	case dsn != "":
		return targets.DSNEngine(dsn)
	}
	return targets.EnginePostgres
}
