package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/idemcheck/idemcheck/docker/internal/entry"
)

// socketDir is the Unix socket folder Debian's PostgreSQL is built with.
const socketDir = "/var/run/postgresql"

func run(args []string) error {
	options, server := entry.ServerCommand(args, "postgres")
	if !server {
		return entry.Exec(args)
	}
	s := readSettings(os.Getenv)
	if os.Geteuid() == 0 {
		if err := entry.Become("postgres", 0o700, s.dataDir, socketDir); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "PG_VERSION")); errors.Is(err, os.ErrNotExist) {
		if err := initCluster(s); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	postgres, err := exec.LookPath("postgres")
	if err != nil {
		return err
	}
	return syscall.Exec(postgres, serverArgv(options), serverEnv(os.Environ()))
}

// initCluster runs initdb, then creates the database in single-user mode,
// which needs no server, no socket and no client program.
func initCluster(s settings) error {
	initdb := exec.Command("initdb", initdbArgs(s)...)
	initdb.Stdout, initdb.Stderr = os.Stdout, os.Stderr
	if s.password != "" {
		initdb.Stdin = strings.NewReader(s.password + "\n")
	}
	if err := initdb.Run(); err != nil {
		return fmt.Errorf("initdb: %w", err)
	}
	if s.database == "postgres" {
		return nil
	}
	// -F: no fsync, as for initdb; with it, the statement costs seconds.
	single := exec.Command("postgres", "--single", "-F", "-D", s.dataDir, "postgres")
	single.Stdin = strings.NewReader(createDatabaseSQL(s.database) + "\n")
	out, err := single.CombinedOutput()
	// Single-user mode reports a failed statement and still exits 0.
	if err != nil || bytes.Contains(out, []byte("ERROR:")) || bytes.Contains(out, []byte("FATAL:")) {
		return fmt.Errorf("creating database %q: %v: %s", s.database, err, bytes.TrimSpace(out))
	}
	fmt.Printf("pg-entrypoint: created database %q\n", s.database)
	return nil
}
