// Command pg-entrypoint starts PostgreSQL in the idemcheck/postgres image:
// the image's entry point, static and written in Go, so that privileges are
// dropped and the server exec'd without a shell script (the image's only
// shell is the one initdb needs for popen).
//
// With a command of "postgres" (the default) or of server options only
// ("-c fsync=off"), it creates the cluster on first start, when $PGDATA
// holds none yet, the way the official image does: the superuser
// $POSTGRES_USER (default postgres) with password $POSTGRES_PASSWORD, and the
// database $POSTGRES_DB (default: the user's name). Then it replaces itself
// with the server, which listens on 127.0.0.1 (a -c listen_addresses option
// in the command overrides that) at $PGPORT or the port a -c port option
// names. Started as root it hands $PGDATA to the postgres user and drops to
// it first, because PostgreSQL refuses to run as root. Any other command is
// run as it is.
//
// Scripts in /docker-entrypoint-initdb.d are not supported: with no shell
// and no psql to run them, a test creates its schema over a connection.
package main

import (
	"fmt"
	"os"
	"strings"
)

// settings is what the environment asks of a new cluster.
type settings struct {
	dataDir    string
	user       string
	password   string
	database   string
	authMethod string // for TCP connections; the socket always trusts
}

// defaultDataDir is where the official image keeps its cluster too, so
// options written for it carry over.
const defaultDataDir = "/var/lib/postgresql/data"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "pg-entrypoint:", err)
		os.Exit(1)
	}
}

// serverArgv is the server's argument vector: listening on loopback unless
// the options say otherwise (a later -c wins), since the image runs on host
// networking, where "*" would mean every address of the machine.
func serverArgv(options []string) []string {
	return append([]string{"postgres", "-c", "listen_addresses=127.0.0.1"}, options...)
}

// readSettings reads the official image's variables, with its defaults.
func readSettings(getenv func(string) string) settings {
	s := settings{
		dataDir:    getenv("PGDATA"),
		user:       getenv("POSTGRES_USER"),
		password:   getenv("POSTGRES_PASSWORD"),
		database:   getenv("POSTGRES_DB"),
		authMethod: getenv("POSTGRES_HOST_AUTH_METHOD"),
	}
	if s.dataDir == "" {
		s.dataDir = defaultDataDir
	}
	if s.user == "" {
		s.user = "postgres"
	}
	if s.database == "" {
		s.database = s.user
	}
	if s.authMethod == "" {
		// Without a password there is nothing to check; the server only
		// listens on loopback and holds throwaway data.
		s.authMethod = "trust"
		if s.password != "" {
			s.authMethod = "scram-sha-256"
		}
	}
	return s
}

// initdbArgs are initdb's arguments for s. The password, if any, is read
// from standard input so it never shows in a process list. --no-sync:
// a container's cluster is throwaway, and the fsyncs cost seconds.
func initdbArgs(s settings) []string {
	args := []string{"-D", s.dataDir, "-U", s.user, "-E", "UTF8", "--locale=C", "--no-sync",
		"--auth-local=trust", "--auth-host=" + s.authMethod}
	if s.password != "" {
		args = append(args, "--pwfile=/dev/stdin")
	}
	return args
}

// createDatabaseSQL is the statement that creates the database named name,
// quoted as an identifier so any name works.
func createDatabaseSQL(name string) string {
	return `CREATE DATABASE "` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// serverEnv is the server's environment: the password stays behind, since
// the cluster already has it and every process could read it otherwise.
func serverEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		if !strings.HasPrefix(kv, "POSTGRES_PASSWORD=") {
			out = append(out, kv)
		}
	}
	return out
}
