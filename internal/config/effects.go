package config

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/assert"
	"github.com/idemcheck/idemcheck/certify"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets"
)

// effects checks how effects are counted: in SQL, with its arguments and a
// database, or through the API.
//
// A database given to a target reached by URL is there only to count
// effects: without an effect query it would count nothing while the
// report said effects were counted in it. An effect query's templates
// must be ones the request sends, or the query counts what no attempt
// made (a lost effect on every intent of a correct API).
func (s Spec) effects(c *certify.Config, started bool, e scenarios.Endpoint) error {
	dbGiven := s.DSN != "" && !s.DSNDefault || s.DB != nil
	switch {
	case !started && dbGiven && s.EffectSQL == "" && s.EffectHTTP != "":
		field := idemcheck.Field("DSN")
		if s.DB != nil {
			field = "DB"
		}
		return usage(field, "%s goes with %s, and %s counts effects through the API: give one way to count, not both (leave %s out, or count in SQL)",
			field, idemcheck.Field("EffectSQL"), idemcheck.Field("EffectHTTP"), field)
	case !started && dbGiven && s.EffectSQL == "":
		field := idemcheck.Field("DSN")
		if s.DB != nil {
			field = "DB"
		}
		return usage(field, "%s needs %s, the query that counts one intent's effects there (such as SELECT count(*) FROM orders WHERE customer_id = $1): "+
			"without one nothing is counted", field, idemcheck.Field("EffectSQL"))
	case s.EffectSQL != "" && s.EffectHTTP != "":
		return usage("EffectHTTP", "give %s or %s, not both: one effect count per endpoint", idemcheck.Field("EffectSQL"), idemcheck.Field("EffectHTTP"))
	case s.EffectCount != nil && s.EffectHTTP == "":
		return usage("EffectCount", "%s goes with %s", idemcheck.Field("EffectCount"), idemcheck.Field("EffectHTTP"))
	case s.EffectSQL != "" && s.DSN == "" && s.DB == nil && !started:
		return usage("EffectSQL", "%s needs a database: %s", idemcheck.Field("EffectSQL"), idemcheck.Setting("DB"))
	}
	args, err := ParseEffectArgs(s.EffectSQL, s.EffectArgs)
	if err != nil {
		return err
	}
	for i, a := range args {
		if err := unsent(idemcheck.Field(fmt.Sprintf("EffectArgs[%d]", i)), a, e); err != nil {
			return err
		}
	}
	c.EffectSQL, c.EffectArgs = s.EffectSQL, args
	if s.EffectHTTP == "" {
		return nil
	}
	t, err := parseEffectHTTP(s.EffectHTTP)
	if err != nil {
		return usage("EffectHTTP", "%s: %v", idemcheck.Field("EffectHTTP"), err)
	}
	if s.EffectCount == nil {
		return usage("EffectHTTP", "%s needs %s: the JSON pointer of the array (its length is the count) or number in the answer, such as /data ('' for the whole answer)",
			idemcheck.Field("EffectHTTP"), idemcheck.Field("EffectCount"))
	}
	if err := assert.ValidatePointer(*s.EffectCount); err != nil {
		return usage("EffectCount", "%s: %v", idemcheck.Field("EffectCount"), err)
	}
	if err := unsent("EffectHTTP", t, e); err != nil {
		return err
	}
	c.EffectHTTP, c.EffectCount = &t, *s.EffectCount
	return nil
}

// unsent refuses an effect template whose per-intent value ({{intent}},
// {{seq}}) the request never sends: the query would look for what no
// attempt carried. The key ({{key}}) is always sent.
func unsent(field idemcheck.Field, t idemcheck.Template, e scenarios.Endpoint) error {
	for _, name := range []string{"intent", "seq"} {
		if !t.Uses(name) || e.Body.Uses(name) || e.Path.Uses(name) || slices.ContainsFunc(e.Header, func(h scenarios.Header) bool { return h.Value.Uses(name) }) {
			continue
		}
		if e.Body.Fill(idemcheck.Intent{}) == "" {
			// The newcomer's mistake: no body at all.
			return usage(field, "%s uses {{%s}}, but the request has no body (%s) and sends no {{%s}} in %s or %s: give the body, "+
				"such as {\"customerId\":\"{{%s}}\",\"totalCents\":4000}, so the count finds what each intent created",
				field, name, idemcheck.Field("Body"), name, idemcheck.Field("Path"), idemcheck.Field("Headers"), name)
		}
		return usage(field, "%s uses {{%s}}, which the request never sends (not in %s, %s or %s): the count would find none of its effects; "+
			"put {{%s}} in the body, such as {\"customerId\":\"{{%s}}\"}, or count by what the request sends ({{key}})",
			field, name, idemcheck.Field("Body"), idemcheck.Field("Path"), idemcheck.Field("Headers"), name, name)
	}
	return nil
}

// ParseEffectArgs parses the templates bound as $1, $2, … of sql, without
// which they mean nothing.
func ParseEffectArgs(sql string, args []string) ([]idemcheck.Template, error) {
	if len(args) > 0 && sql == "" {
		return nil, usage("EffectArgs", "%s needs %s", idemcheck.Field("EffectArgs"), idemcheck.Field("EffectSQL"))
	}
	var out []idemcheck.Template
	for i, a := range args {
		t, err := template(idemcheck.Field(fmt.Sprintf("EffectArgs[%d]", i)), a)
		if err != nil {
			return nil, err
		}
		out = append(out, t)
	}
	return out, nil
}

// parseEffectHTTP reads an HTTP read-back, "GET /path?query" or "/path",
// the path a template: the read-back only ever sends GET.
func parseEffectHTTP(s string) (idemcheck.Template, error) {
	s = strings.TrimSpace(s)
	if m, rest, ok := strings.Cut(s, " "); ok && !strings.HasPrefix(s, "/") {
		if !strings.EqualFold(m, "GET") {
			return idemcheck.Template{}, fmt.Errorf("%q: the effect read-back only sends GET, so it never changes the target: write GET /path", m)
		}
		s = strings.TrimSpace(rest)
	}
	if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " \r\n\t") {
		return idemcheck.Template{}, fmt.Errorf("expected GET and a path such as 'GET /orders?customerId={{intent}}'")
	}
	t, err := idemcheck.ParseTemplate(s)
	if err != nil {
		return t, err
	}
	if !strings.Contains(s, "{{") {
		return t, fmt.Errorf("the path has no {{intent}}: it would count every intent's effects together, not one intent's")
	}
	return t, nil
}

// OpenDB opens the database an effect count in SQL reads for a target
// reached by URL (Config.DSN), checked against the loopback rule first.
func OpenDB(ctx context.Context, dsn string, allowRemote bool) (*targets.Database, error) {
	if err := targets.CheckDSN(dsn, "DSN", allowRemote); err != nil {
		return nil, err
	}
	open := targets.OpenDatabase
	if allowRemote {
		open = targets.OpenRemoteDatabase
	}
	d, err := open(ctx, dsn)
	if err != nil {
		// Wrapped, not flattened: a refusal names its setting (a
		// FieldError) for the caller to say in its words.
		return nil, idemcheck.Unavailablef("%w", err)
	}
	return d, nil
}

// UseDatabase points c's effect count at d, whatever its engine: a
// PostgreSQL pool (DB) or a MySQL-family database (EffectDB).
func UseDatabase(c *certify.Config, d *targets.Database) { useDatabase(&c.Settings, d) }

// UseSoakDatabase is UseDatabase for a soak.
func UseSoakDatabase(c *certify.SoakConfig, d *targets.Database) { useDatabase(&c.Settings, d) }

func useDatabase(c *certify.Settings, d *targets.Database) {
	c.DB = d.Pool
	if d.SQL != nil {
		c.EffectDB = d.SQL
	}
}
