package main

import (
	"strings"
	"testing"
)

// The official image's variables, MARIADB_* first, MYSQL_* as well, and
// its refusals: no root password unless an empty one is allowed, no user
// without a password.
func TestReadSettings(t *testing.T) {
	getenv := func(vars map[string]string) func(string) string {
		return func(name string) string { return vars[name] }
	}
	s, err := readSettings(getenv(map[string]string{"MARIADB_ROOT_PASSWORD": "r", "MYSQL_USER": "app", "MARIADB_PASSWORD": "p", "MYSQL_DATABASE": "shop"}))
	if err != nil || s != (settings{dataDir: defaultDataDir, rootPassword: "r", user: "app", password: "p", database: "shop"}) {
		t.Errorf("readSettings = %+v, %v", s, err)
	}
	for _, vars := range []map[string]string{
		{},
		{"MARIADB_ALLOW_EMPTY_ROOT_PASSWORD": "1", "MARIADB_USER": "app"},
		{"MARIADB_ROOT_PASSWORD": "r", "MARIADB_USER": "root", "MARIADB_PASSWORD": "p"},
	} {
		if _, err := readSettings(getenv(vars)); err == nil {
			t.Errorf("readSettings(%v) took them", vars)
		}
	}
}

// Names and passwords are quoted, whatever they hold.
func TestSetupSQLQuotes(t *testing.T) {
	sql := setupSQL(settings{rootPassword: `a'b\c`, user: "o'k", password: "p", database: "sh`op"})
	for _, want := range []string{`IDENTIFIED BY 'a''b\\c'`, "CREATE DATABASE IF NOT EXISTS `sh``op`", "CREATE USER 'o''k'@'%'", "GRANT ALL ON `sh``op`.* TO 'o''k'@'%'"} {
		if !strings.Contains(sql, want) {
			t.Errorf("setup SQL lacks %s:\n%s", want, sql)
		}
	}
}
