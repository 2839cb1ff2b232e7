package main

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// socketDir is the Unix socket folder Debian's PostgreSQL is built with.
const socketDir = "/var/run/postgresql"

func run(args []string) error {
	options, server := serverCommand(args)
	if !server {
		path, err := exec.LookPath(args[0])
		if err != nil {
			return err
		}
		return syscall.Exec(path, args, os.Environ())
	}
	s := readSettings(os.Getenv)
	if os.Geteuid() == 0 {
		if err := becomePostgres(s.dataDir); err != nil {
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

// becomePostgres hands the data and socket folders to the postgres user and
// switches this process to it. Since Go 1.16 the set*id calls apply to every
// thread, so the children and the exec that follow all run as postgres.
func becomePostgres(dataDir string) error {
	u, err := user.Lookup("postgres")
	if err != nil {
		return fmt.Errorf("the image has no postgres user: %w", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return fmt.Errorf("postgres user: %w", err)
	}
	for _, dir := range []string{dataDir, socketDir} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		if err := os.Chown(dir, uid, gid); err != nil {
			return err
		}
	}
	// initdb insists on a private data folder.
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return err
	}
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(gid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	return nil
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
