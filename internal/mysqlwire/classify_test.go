package mysqlwire

import (
	"fmt"
	"testing"
)

func TestClassify(t *testing.T) {
	w, r, b, c, rb, o, set := Write, Read, Begin, Commit, Rollback, Other, SetAutocommit
	cases := []struct {
		q    string
		want []Class
	}{
		{"BEGIN", []Class{b}},
		{"begin work", []Class{b}},
		{"  START\tTRANSACTION READ ONLY", []Class{b}},
		{"START TRANSACTION WITH CONSISTENT SNAPSHOT", []Class{b}},
		{"BEGIN NOT ATOMIC INSERT INTO t VALUES (1); COMMIT; END", []Class{o}}, // a compound statement, one with its semicolons
		{"Commit", []Class{c}},
		{"COMMIT WORK", []Class{c}},
		{"ROLLBACK", []Class{rb}},
		{"ROLLBACK WORK TO SAVEPOINT s", []Class{o}},
		{"ROLLBACK TO s", []Class{o}},
		{"XA START 'x'", []Class{b}},
		{"XA COMMIT 'x'", []Class{c}},
		{"insert into t values (1)", []Class{w}},
		{"REPLACE INTO t VALUES (1)", []Class{w}},
		{"UPDATE t SET a = 1", []Class{w}},
		{"DELETE FROM t", []Class{w}},
		{"LOAD DATA LOCAL INFILE 'f' INTO TABLE t", []Class{w}},
		{"WITH x AS (SELECT 1) UPDATE t JOIN x SET a = 1", []Class{w}},
		{"WITH x AS (SELECT 1) SELECT * FROM x", []Class{r}},
		{"SELECT 1", []Class{r}},
		{"(SELECT 1) UNION (SELECT 2)", []Class{r}},
		{"SHOW TABLES", []Class{r}},
		{"select 'a;b', \"c;d\", `e;f` from t", []Class{r}},
		{"select 'it''s; DELETE', 'x\\'; DELETE FROM t' from t", []Class{r}},
		{"# comment; DELETE\nSELECT 1", []Class{r}},
		{"-- comment; DELETE\nSELECT 1", []Class{r}},
		{"SELECT 1--1; DELETE FROM t", []Class{r, w}}, // "--" without a space is no comment
		{"/* UPDATE */ INSERT INTO t VALUES (1)", []Class{w}},
		{"/*+ hint */ SELECT 1", []Class{r}},
		{"/*!40101 SET autocommit=0 */", []Class{set}},
		{"/*M!100100 INSERT INTO t VALUES (1) */", []Class{w}},
		{"/*!50001 DELETE FROM t*/; SELECT 1", []Class{w, r}},
		{"BEGIN; INSERT INTO t VALUES (1); COMMIT", []Class{b, w, c}},
		{";;  ; SELECT 1;", []Class{r}},
		{"", nil},
		{"   -- only a comment", nil},
		{"SET autocommit = 0", []Class{set}},
		{"SET @@autocommit := 1", []Class{set}},
		{"set session autocommit=OFF", []Class{set}},
		{"SET @@session.autocommit = ON, sql_mode = ''", []Class{set}},
		{"SET sql_mode = '', autocommit = 1", []Class{set}},
		{"SET GLOBAL autocommit = 0", []Class{o}},
		{"SET @@global.autocommit = 0", []Class{o}},
		{"SET @autocommit = 0", []Class{o}},
		{"SET NAMES utf8mb4", []Class{o}},
		{"CREATE TABLE t (id INT)", []Class{o}},
		{"CREATE PROCEDURE p() BEGIN INSERT INTO t VALUES (1); COMMIT; END; SELECT 1", []Class{o}},
		{"CREATE TABLE event (id INT); INSERT INTO event VALUES (1)", []Class{o, w}},
		{"CALL p()", []Class{o}},
		{"SELECT * FROM t WHERE a = '\\'' ; DELETE FROM t", []Class{r, w}},
		{"'unterminated", []Class{o}},
		{"/* unterminated", nil},
	}
	for _, tc := range cases {
		var got []Class
		for _, s := range Classify(tc.q, false) {
			got = append(got, s.Class)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("Classify(%q) = %v, want %v", tc.q, got, tc.want)
		}
	}
}

func TestClassifyDetails(t *testing.T) {
	one := func(q string, noBackslash bool) Statement {
		t.Helper()
		st := Classify(q, noBackslash)
		if len(st) != 1 {
			t.Fatalf("Classify(%q) = %+v, want one statement", q, st)
		}
		return st[0]
	}
	if s := one("COMMIT AND CHAIN", false); s.Class != Commit || !s.Chain {
		t.Errorf("COMMIT AND CHAIN: %+v", s)
	}
	if s := one("COMMIT AND NO CHAIN", false); s.Class != Commit || s.Chain {
		t.Errorf("COMMIT AND NO CHAIN: %+v", s)
	}
	if s := one("ROLLBACK WORK AND CHAIN", false); s.Class != Rollback || !s.Chain {
		t.Errorf("ROLLBACK AND CHAIN: %+v", s)
	}
	for _, q := range []string{"SELECT * FROM t FOR UPDATE", "select * from t for share", "SELECT a FROM t LOCK IN SHARE MODE"} {
		if s := one(q, false); s.Class != Read || !s.Locking {
			t.Errorf("%s: %+v", q, s)
		}
	}
	if s := one("SELECT 'FOR UPDATE' FROM t", false); s.Locking {
		t.Errorf("a quoted FOR UPDATE locks: %+v", s)
	}
	if s := one("SET autocommit=1", false); s.Class != SetAutocommit || !s.Autocommit {
		t.Errorf("SET autocommit=1: %+v", s)
	}
	if s := one("SET autocommit=false", false); s.Class != SetAutocommit || s.Autocommit {
		t.Errorf("SET autocommit=false: %+v", s)
	}
	if s := one("ALTER TABLE t ADD c INT", false); s.Class != Other || !s.ImplicitCommit {
		t.Errorf("ALTER: %+v", s)
	}
	if s := one("CREATE TEMPORARY TABLE x (a INT)", false); s.ImplicitCommit {
		t.Errorf("CREATE TEMPORARY TABLE commits: %+v", s)
	}
	// With NO_BACKSLASH_ESCAPES the backslash ends nothing: the string
	// closes at the second quote, and what follows is a statement.
	if st := Classify(`SELECT 'a\'; DELETE FROM t; SELECT '`, true); len(st) != 3 || st[1].Class != Write {
		t.Errorf("without backslash escapes: %+v", st)
	}
	if st := Classify(`SELECT 'a\'; DELETE FROM t; SELECT '`, false); len(st) != 1 {
		t.Errorf("with backslash escapes: %+v", st)
	}
}
