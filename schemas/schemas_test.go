// Package schemas_test validates the JSON Schemas in this folder against
// real files: the example suite, the policy file of the docs, and reports
// of real certifications of the example orders API.
package schemas_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/idemchecktest"
	"github.com/idemcheck/idemcheck/scenarios"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// load reads a schema file; strict adds additionalProperties: false to
// every object that lists its properties and says nothing else, so that a
// report field the schema does not describe fails the test (the published
// report schema lets v1 consumers accept fields added later).
func load(t *testing.T, name string, strict bool) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(name)
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	if strict {
		tighten(doc)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	require.NoError(t, c.AddResource(name, doc))
	s, err := c.Compile(name)
	require.NoError(t, err)
	return s
}

func tighten(v any) {
	switch o := v.(type) {
	case map[string]any:
		if _, ok := o["properties"]; ok {
			if _, set := o["additionalProperties"]; !set {
				o["additionalProperties"] = false
			}
		}
		for _, x := range o {
			tighten(x)
		}
	case []any:
		for _, x := range o {
			tighten(x)
		}
	}
}

// asJSON turns a YAML or Go value into what a JSON Schema validator reads.
func asJSON(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	require.NoError(t, err)
	return out
}

func yamlFile(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	require.NoError(t, yaml.Unmarshal(b, &v))
	return asJSON(t, v)
}

func TestSuiteSchema(t *testing.T) {
	s := load(t, "suite.schema.json", false)
	b, err := os.ReadFile(filepath.Join("..", "examples", "suites", "orders.yaml"))
	require.NoError(t, err)
	require.NoError(t, s.Validate(yamlFile(t, b)), "the example suite")
	mariadb := "target: {image: idemcheck/ordersmysql:local, db_engine: mysql}\nendpoints:\n  - path: /orders\n"
	require.NoError(t, s.Validate(yamlFile(t, []byte(mariadb))), "an image on a MariaDB container")

	for _, bad := range []string{
		"endpoints: []\n",
		"endpoints:\n  - path: /a\n    checks: [Concurrent-Burst]\n",
		"checks: [concurrent burst]\nendpoints:\n  - path: /a\n",
		"endpoints:\n  - path: /a\n    efect: {sql: x}\n",
		"target: {url: x}\n",
		"target: {image: x, db_engine: oracle}\nendpoints:\n  - path: /a\n",
		// A certification makes no random choice: a suite has no seed.
		"options: {seed: 1}\nendpoints:\n  - path: /a\n",
	} {
		assert.Error(t, s.Validate(yamlFile(t, []byte(bad))), bad)
	}

	// The schema knows the shape of a check's name, not the list: idemcheck
	// checks a name against its registry (internal/suite's tests), so a
	// check added to the registry needs no edit here. Every check's name
	// has that shape, at the top and in an endpoint.
	names := "[" + strings.Join(scenarios.Names(), ", ") + "]"
	all := "checks: " + names + "\nendpoints:\n  - path: /a\n    checks: " + names + "\n"
	assert.NoError(t, s.Validate(yamlFile(t, []byte(all))), "every check's name")
}

// The policy file shown in docs/checks.md is valid, and so is every
// preset written as a file.
func TestPolicySchema(t *testing.T) {
	s := load(t, "policy.schema.json", false)
	doc, err := os.ReadFile(filepath.Join("..", "docs", "checks.md"))
	require.NoError(t, err)
	m := regexp.MustCompile("(?s)```yaml\n(# policy.yaml\n.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "docs/checks.md shows a policy file")
	require.NoError(t, s.Validate(yamlFile(t, m[1])))
	for _, p := range idemcheck.PresetNames() {
		require.NoError(t, s.Validate(yamlFile(t, []byte("preset: "+p+"\n"))))
	}
	assert.Error(t, s.Validate(yamlFile(t, []byte("preset: acme\n"))))
	assert.Error(t, s.Validate(yamlFile(t, []byte("mismatch_satus: 422\n"))))

	// The policy file of docs/webhooks.md, which signs; every scheme
	// idemcheck signs with, and nothing else, a secret from the
	// environment only, and a scheme always.
	doc, err = os.ReadFile(filepath.Join("..", "docs", "webhooks.md"))
	require.NoError(t, err)
	m = regexp.MustCompile("(?s)```yaml\n(# webhook-policy.yaml\n.*?)```").FindSubmatch(doc)
	require.NotNil(t, m, "docs/webhooks.md shows a policy file that signs")
	require.NoError(t, s.Validate(yamlFile(t, m[1])))
	for _, scheme := range scenarios.SignSchemes {
		require.NoError(t, s.Validate(yamlFile(t, []byte("preset: webhook\nsign: {scheme: "+scheme+", secret: '${S}', header: X-Sig, skew: -10m}\n"))), scheme)
	}
	for _, bad := range []string{
		"sign: {scheme: paypal, secret: '${S}'}\n",
		"sign: {scheme: stripe, secret: whsec_literal}\n",
		"sign: {secret: '${S}'}\n",
		"sign: {scheme: stripe, secret: '${S}', secrett: x}\n",
	} {
		assert.Error(t, s.Validate(yamlFile(t, []byte(bad))), bad)
	}
}

// Reports of real certifications, a pass and a failure with anomalies and
// their evidence, alone and as a suite's report, are valid against the
// schema, tightened so that a field it does not describe fails.
func TestReportSchema(t *testing.T) {
	s := load(t, "report-v1.schema.json", true)
	var reports []idemcheck.Report
	for _, tc := range []struct {
		v      orders.Variant
		checks []string
	}{{orders.Reference, nil}, {orders.CheckThenInsert, []string{"concurrent-burst", "sequential-replay"}}} {
		pool := pgtest.Pool(t)
		require.NoError(t, orders.Migrate(context.Background(), pool))
		api := orders.New(pool, orders.Config{Variant: tc.v})
		t.Cleanup(api.Close)
		r, err := idemchecktest.Check(context.Background(), idemchecktest.Target{
			Handler: api, Path: "/orders", Body: `{"customerId":"{{intent}}","totalCents":4000}`,
			DB: pool, EffectSQL: "SELECT count(*) FROM orders WHERE customer_id = $1", Checks: tc.checks,
		})
		require.NoError(t, err)
		r.Tool = idemcheck.Tool{Name: "idemcheck", Version: "(devel)", Commit: "0123456789ab", Go: "go1.26.0"}
		r.StartedAt = time.Now().UTC()
		reports = append(reports, r)
	}
	require.Equal(t, idemcheck.Pass, reports[0].Verdict)
	require.Equal(t, idemcheck.Fail, reports[1].Verdict, "the check-then-insert variant fails, with anomalies to validate")
	require.NotEmpty(t, reports[1].Anomalies[0].Evidence)
	for i, r := range reports {
		var b bytes.Buffer
		require.NoError(t, r.WriteJSON(&b))
		v, err := jsonschema.UnmarshalJSON(&b)
		require.NoError(t, err)
		assert.NoError(t, s.Validate(v), "report %d", i)
	}
	// Reports of earlier builds carry a seed that chose nothing: they still
	// validate, the field optional.
	for i, r := range reports {
		var b bytes.Buffer
		require.NoError(t, r.WriteJSON(&b))
		assert.NotContains(t, b.String(), `"seed"`, "report %d", i)
		old := strings.Replace(b.String(), `"version": 1,`, `"version": 1, "seed": 42,`, 1)
		v, err := jsonschema.UnmarshalJSON(strings.NewReader(old))
		require.NoError(t, err)
		assert.NoError(t, s.Validate(v), "an older report %d, with its seed", i)
	}
	// An anomaly witnessed by a target's calls to a provider double
	// carries the calls, every field set.
	withCalls := reports[1]
	at := time.Now().UTC()
	withCalls.Anomalies = append(slices.Clone(withCalls.Anomalies), idemcheck.Anomaly{
		Kind: idemcheck.ProviderDuplicateCharge, Check: "failed-attempt", Intent: "ic-x-1", Key: "k", Explanation: "two charges", Attempts: []int{1, 2},
		Calls: []idemcheck.ProviderCall{{Provider: idemcheck.DefaultProviderEnv, Seq: 1, Method: "POST", Path: "/v1/charges", Key: "k1", Body: "{}",
			Conn: "127.0.0.1:5000", Start: at, End: at, Status: 200, Charge: "ch_000001", Created: true, Replayed: true, Fault: "provider-5xx", Mapped: idemcheck.MappedByID}},
	})
	withCalls.Checks = slices.Clone(withCalls.Checks)
	withCalls.Checks[0].Provider = &idemcheck.ProviderTraffic{Calls: 3, Charges: 2, CallsPerIntent: 1.5, MaxCallsPerIntent: 2}
	var wc bytes.Buffer
	require.NoError(t, withCalls.WriteJSON(&wc))
	vc, err := jsonschema.UnmarshalJSON(&wc)
	require.NoError(t, err)
	assert.NoError(t, s.Validate(vc), "a report with a provider anomaly's calls")

	// Remarks apart from the verdict, each with its class, and a check's
	// indexes into them.
	withRemarks := reports[0]
	withRemarks.Remarks = []idemcheck.Anomaly{{Kind: idemcheck.MalformedKeyAccepted, Class: idemcheck.ConformanceFinding, Check: "key-syntax",
		Intent: "ic-x-1", Key: "k", Explanation: "a key of 256 characters was taken", Attempts: []int{1}}}
	withRemarks.Checks = slices.Clone(withRemarks.Checks)
	withRemarks.Checks[0].Remarks = []int{0}
	var wr bytes.Buffer
	require.NoError(t, withRemarks.WriteJSON(&wr))
	require.Contains(t, wr.String(), `"class": "conformance"`)
	vr, err := jsonschema.UnmarshalJSON(&wr)
	require.NoError(t, err)
	assert.NoError(t, s.Validate(vr), "a report with remarks")

	var b bytes.Buffer
	require.NoError(t, idemcheck.NewSuiteReport(reports).WriteJSON(&b))
	suiteJSON := b.String()
	v, err := jsonschema.UnmarshalJSON(&b)
	require.NoError(t, err)
	assert.NoError(t, s.Validate(v), "a suite's report")

	surprise := strings.Replace(suiteJSON, `"version": 1,`, `"version": 1, "surprise": true,`, 1)
	v, err = jsonschema.UnmarshalJSON(strings.NewReader(surprise))
	require.NoError(t, err)
	assert.Error(t, s.Validate(v), "a field the schema does not describe fails the tightened schema")

	for _, broken := range []string{
		strings.Replace(suiteJSON, `"verdict": "fail"`, `"verdict": "maybe"`, 1),
		strings.Replace(suiteJSON, `"name": "concurrent-burst"`, `"name": "Concurrent burst"`, 1),
	} {
		require.NotEqual(t, suiteJSON, broken)
		v, err = jsonschema.UnmarshalJSON(strings.NewReader(broken))
		require.NoError(t, err)
		assert.Error(t, s.Validate(v))
	}
}
