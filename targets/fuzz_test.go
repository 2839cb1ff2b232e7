package targets

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzRedactDSN: no password survives redaction, in URL or key=value form,
// whatever else the DSN holds.
func FuzzRedactDSN(f *testing.F) {
	f.Add("app", "s3cret-pw", "127.0.0.1:5432", "sslmode=disable")
	f.Add("app", "p@ss/w?rd", "[::1]:5432", "application_name=me@example.com")
	f.Add("", "hunter22", "h1:5432,h2:5433", "")
	f.Fuzz(func(t *testing.T, user, password, host, query string) {
		if len(password) < 6 || strings.ContainsAny(password, "\x00") {
			return // too short to tell apart from the rest of the DSN
		}
		// The password may also occur elsewhere in the DSN by chance (a
		// query of zeros and a password of zeros): what must not survive is
		// the password itself, so the redacted DSN holds it no more often
		// than the same DSN with the password replaced does.
		survived := func(got, without string) bool {
			return strings.Count(got, password) > strings.Count(without, password) ||
				strings.Count(got, url.QueryEscape(password)) > strings.Count(without, url.QueryEscape(password))
		}
		// The URL form: the password escaped as a client library writes it.
		form := func(pw string) string {
			u := "postgres://" + url.UserPassword(user, pw).String() + "@" + host + "/db"
			if query != "" {
				u += "?" + query
			}
			return u
		}
		if got := RedactDSN(form(password)); survived(got, form("xxxxx")) {
			t.Fatalf("password %q survived in %q", password, got)
		}
		// The key=value form, the password quoted as libpq requires. The
		// host is a bare word: one holding a quote or a backslash would
		// make the rest of the DSN its value, as libpq reads it, and
		// "password" then names no setting.
		kvHost := strings.Fields(strings.NewReplacer(`'`, "", `\`, "").Replace(host) + " h")[0]
		kvForm := func(pw string) string {
			q := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw)
			return "host=" + kvHost + " user=app password='" + q + "' dbname=db"
		}
		if got := RedactDSN(kvForm(password)); survived(got, kvForm("xxxxx")) {
			t.Fatalf("password %q survived in %q", password, got)
		}
		// The MySQL family's URL, escaped as a client library writes it.
		myForm := func(pw string) string {
			return "mysql://" + url.UserPassword(user, pw).String() + "@" + host + "/db"
		}
		if got := RedactDSN(myForm(password)); survived(got, myForm("xxxxx")) {
			t.Fatalf("password %q survived in %q", password, got)
		}
		// The Go driver's form, the password raw as that driver reads it
		// (anything but a '/', which would end it early).
		if !strings.Contains(password, "/") && !strings.ContainsAny(user, ":@/") {
			goForm := func(pw string) string { return user + ":" + pw + "@tcp(127.0.0.1:3306)/db" }
			if got := RedactDSN(goForm(password)); survived(got, goForm("xxxxx")) {
				t.Fatalf("password %q survived in %q", password, got)
			}
		}
	})
}
