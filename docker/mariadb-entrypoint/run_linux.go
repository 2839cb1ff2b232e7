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

// shareDir holds the system-table scripts, where Debian's MariaDB keeps them.
const shareDir = "/usr/share/mysql"

// socketDir is the Unix socket folder Debian's MariaDB is built with.
const socketDir = "/run/mysqld"

func run(args []string) error {
	options, server := entry.ServerCommand(args, "mariadbd", "mysqld")
	if !server {
		return entry.Exec(args)
	}
	s, err := readSettings(os.Getenv)
	if err != nil {
		return err
	}
	if os.Geteuid() == 0 {
		if err := entry.Become("mysql", 0o750, s.dataDir, socketDir); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(s.dataDir, "mysql")); errors.Is(err, os.ErrNotExist) {
		if err := initDataDir(s); err != nil {
			return err
		}
	} else if err != nil {
		return err
	}
	mariadbd, err := exec.LookPath("mariadbd")
	if err != nil {
		return err
	}
	return syscall.Exec(mariadbd, serverArgv(s, options), serverEnv(os.Environ()))
}

// initDataDir creates the system tables, the accounts and the database
// with mariadbd --bootstrap, which reads SQL on standard input: the
// passwords go there, never into a process list. The options keep the
// throwaway server small and quick, as the running one will be.
func initDataDir(s settings) error {
	var sql bytes.Buffer
	sql.WriteString("CREATE DATABASE IF NOT EXISTS mysql;\nUSE mysql;\nSET @auth_root_socket=NULL;\n")
	for _, name := range systemTables {
		data, err := os.ReadFile(filepath.Join(shareDir, name))
		if err != nil {
			return fmt.Errorf("the image lacks MariaDB's system tables: %w", err)
		}
		sql.Write(data)
		sql.WriteString("\n")
	}
	sql.WriteString(setupSQL(s))
	boot := exec.Command("mariadbd", "--no-defaults", "--bootstrap", "--datadir="+s.dataDir, "--log-warnings=0",
		"--enforce-storage-engine=", "--max-allowed-packet=8M", "--net-buffer-length=16K", "--skip-log-bin",
		"--innodb-log-file-size=8M", "--innodb-buffer-pool-size=32M", "--innodb-flush-log-at-trx-commit=0",
		"--innodb-doublewrite=0", "--innodb-use-native-aio=0")
	boot.Stdin = &sql
	out, err := boot.CombinedOutput()
	if err != nil || bytes.Contains(out, []byte("[ERROR]")) {
		return fmt.Errorf("creating the system tables: %v: %s", err, bytes.TrimSpace(out))
	}
	fmt.Println("mariadb-entrypoint: data directory created" + created(s))
	return nil
}

// created says what initDataDir made besides the system tables.
func created(s settings) string {
	var parts []string
	if s.database != "" {
		parts = append(parts, fmt.Sprintf("database %q", s.database))
	}
	if s.user != "" {
		parts = append(parts, fmt.Sprintf("user %q", s.user))
	}
	if len(parts) == 0 {
		return ""
	}
	return ", with " + strings.Join(parts, " and ")
}

// serverEnv is the server's environment: the passwords stay behind, since
// the data directory already has them and every process could read them
// otherwise.
func serverEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasSuffix(name, "_PASSWORD") {
			out = append(out, kv)
		}
	}
	return out
}
