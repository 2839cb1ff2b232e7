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
		// The URL form: the password escaped as a client library writes it.
		u := "postgres://" + url.UserPassword(user, password).String() + "@" + host + "/db"
		if query != "" {
			u += "?" + query
		}
		if got := RedactDSN(u); strings.Contains(got, password) || strings.Contains(got, url.QueryEscape(password)) {
			t.Fatalf("password %q survived in %q", password, got)
		}
		// The key=value form, the password quoted as libpq requires.
		q := strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(password)
		kv := "host=" + strings.Fields(host + " h")[0] + " user=app password='" + q + "' dbname=db"
		if got := RedactDSN(kv); strings.Contains(got, password) {
			t.Fatalf("password %q survived in %q", password, got)
		}
	})
}
