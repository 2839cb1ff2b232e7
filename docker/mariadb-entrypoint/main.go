// Command mariadb-entrypoint starts MariaDB in the idemcheck/mariadb image:
// the image's entry point, static and written in Go, so that the data
// directory is made and the server exec'd without a shell (the image has
// none: mariadb-install-db is a shell script, so the system tables are
// created the way it creates them, through mariadbd --bootstrap).
//
// With a command of "mariadbd" or "mysqld" (the default) or of server
// options only ("--port=3307"), it creates the data directory on first
// start, when it holds no mysql schema yet, the way the official image
// does: root with $MARIADB_ROOT_PASSWORD (or an empty one with
// $MARIADB_ALLOW_EMPTY_ROOT_PASSWORD), the database $MARIADB_DATABASE, and
// the user $MARIADB_USER with $MARIADB_PASSWORD and every privilege on
// that database. The MYSQL_* names the official image also reads work too.
// Then it replaces itself with the server, which listens on 127.0.0.1 (a
// --bind-address option overrides that) at port 3306 or the one a --port
// option names. Started as root it hands the data directory to the mysql
// user and drops to it first. Any other command is run as it is.
//
// Scripts in /docker-entrypoint-initdb.d are not supported: with no shell
// and no client to run them, a test creates its schema over a connection.
package main

import (
	"fmt"
	"os"
	"strings"
)

// settings is what the environment asks of a new data directory.
type settings struct {
	dataDir      string
	rootPassword string
	emptyRoot    bool
	user         string
	password     string
	database     string
}

// defaultDataDir is where the official image keeps its data too, so
// volumes written for it carry over.
const defaultDataDir = "/var/lib/mysql"

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "mariadb-entrypoint:", err)
		os.Exit(1)
	}
}

// serverArgv is the server's argument vector: on the data directory, and
// listening on loopback unless the options say otherwise (a later option
// wins), since the image runs on host networking, where every address of
// the machine would be reachable otherwise. There is no my.cnf to read.
func serverArgv(s settings, options []string) []string {
	return append([]string{"mariadbd", "--no-defaults", "--datadir=" + s.dataDir, "--bind-address=127.0.0.1",
		"--skip-name-resolve"}, options...)
}

// env returns the first non-empty of the MARIADB_* name and the official
// image's older MYSQL_* one.
func env(getenv func(string) string, name string) string {
	if v := getenv("MARIADB_" + name); v != "" {
		return v
	}
	return getenv("MYSQL_" + name)
}

// readSettings reads the official image's variables.
func readSettings(getenv func(string) string) (settings, error) {
	s := settings{
		dataDir:      getenv("MARIADB_DATADIR"),
		rootPassword: env(getenv, "ROOT_PASSWORD"),
		emptyRoot:    env(getenv, "ALLOW_EMPTY_ROOT_PASSWORD") != "" || getenv("MYSQL_ALLOW_EMPTY_PASSWORD") != "",
		user:         env(getenv, "USER"),
		password:     env(getenv, "PASSWORD"),
		database:     env(getenv, "DATABASE"),
	}
	if s.dataDir == "" {
		s.dataDir = defaultDataDir
	}
	switch {
	case s.user == "root":
		return s, fmt.Errorf("MARIADB_USER=root: root exists already; set MARIADB_ROOT_PASSWORD for it instead")
	case s.rootPassword == "" && !s.emptyRoot:
		// The official image insists too: on host networking every local
		// user of the machine can reach the port.
		return s, fmt.Errorf("set MARIADB_ROOT_PASSWORD, or MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1 for a root without a password")
	case s.user != "" && s.password == "":
		return s, fmt.Errorf("MARIADB_USER=%s needs MARIADB_PASSWORD", s.user)
	}
	return s, nil
}

// systemTables are the scripts mariadb-install-db feeds the bootstrap
// server, in its order, from the share folder; the help tables and the sys
// schema are left out, as no test needs them and they cost seconds.
var systemTables = []string{"mysql_system_tables.sql", "mysql_performance_tables.sql", "mysql_system_tables_data.sql"}

// setupSQL is what runs after the system tables: the accounts and the
// database s asks for. Accounts are for any host ('%'): with
// --skip-name-resolve a TCP client from 127.0.0.1 matches no 'localhost'.
func setupSQL(s settings) string {
	var b strings.Builder
	// The system tables give root passwordless accounts for each name of
	// this host, 127.0.0.1 and ::1, which a TCP client would match before
	// root@'%': only root@localhost (the socket) stays, as in the official
	// image. In bootstrap mode the grant tables are not loaded: FLUSH loads
	// the ones just made, so that account statements work.
	b.WriteString("DELETE FROM mysql.global_priv WHERE User = 'root' AND Host <> 'localhost';\n")
	b.WriteString("DELETE FROM mysql.proxies_priv WHERE User = 'root' AND Host <> 'localhost';\n")
	b.WriteString("FLUSH PRIVILEGES;\n")
	b.WriteString("CREATE USER 'root'@'%' IDENTIFIED BY " + quote(s.rootPassword) + ";\n")
	b.WriteString("GRANT ALL ON *.* TO 'root'@'%' WITH GRANT OPTION;\n")
	b.WriteString("SET PASSWORD FOR 'root'@'localhost' = PASSWORD(" + quote(s.rootPassword) + ");\n")
	if s.database != "" {
		b.WriteString("CREATE DATABASE IF NOT EXISTS " + quoteName(s.database) + ";\n")
	}
	if s.user != "" {
		b.WriteString("CREATE USER " + quote(s.user) + "@'%' IDENTIFIED BY " + quote(s.password) + ";\n")
		if s.database != "" {
			b.WriteString("GRANT ALL ON " + quoteName(s.database) + ".* TO " + quote(s.user) + "@'%';\n")
		}
	}
	return b.String()
}

// quote is s as an SQL string literal; the server runs without
// NO_BACKSLASH_ESCAPES, so backslashes are escaped too.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// quoteName is s as an SQL identifier.
func quoteName(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
