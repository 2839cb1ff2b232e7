package main

import (
	"slices"
	"testing"
)

func TestServerArgvListensOnLoopbackUnlessTold(t *testing.T) {
	got := serverArgv([]string{"-c", "port=5433"})
	want := []string{"postgres", "-c", "listen_addresses=127.0.0.1", "-c", "port=5433"}
	if !slices.Equal(got, want) {
		t.Errorf("serverArgv = %q, want %q", got, want)
	}
	// A later -c wins in PostgreSQL, so the caller's choice comes last.
	got = serverArgv([]string{"-c", "listen_addresses=*"})
	if got[len(got)-1] != "listen_addresses=*" {
		t.Errorf("serverArgv = %q: the caller's listen_addresses must come last", got)
	}
}

func TestReadSettings(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

	s := readSettings(env(nil))
	want := settings{dataDir: defaultDataDir, user: "postgres", database: "postgres", authMethod: "trust"}
	if s != want {
		t.Errorf("defaults: got %+v, want %+v", s, want)
	}

	s = readSettings(env(map[string]string{"POSTGRES_USER": "app", "POSTGRES_PASSWORD": "pw", "PGDATA": "/data"}))
	want = settings{dataDir: "/data", user: "app", password: "pw", database: "app", authMethod: "scram-sha-256"}
	if s != want {
		t.Errorf("with a password: got %+v, want %+v", s, want)
	}
	args := initdbArgs(s)
	if !slices.Contains(args, "--pwfile=/dev/stdin") || !slices.Contains(args, "--auth-host=scram-sha-256") {
		t.Errorf("initdb %q: the password must be set and required over TCP", args)
	}
	for _, a := range args {
		if a == "pw" {
			t.Errorf("initdb %q: the password must not be an argument", args)
		}
	}
}

func TestCreateDatabaseSQLQuotes(t *testing.T) {
	if got, want := createDatabaseSQL(`we"ird`), `CREATE DATABASE "we""ird"`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

func TestServerEnvDropsThePassword(t *testing.T) {
	got := serverEnv([]string{"PGDATA=/d", "POSTGRES_PASSWORD=pw", "POSTGRES_USER=u"})
	if want := []string{"PGDATA=/d", "POSTGRES_USER=u"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
