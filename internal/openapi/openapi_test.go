package openapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck/internal/openapi"
	"github.com/idemcheck/idemcheck/internal/suite"
)

func generate(t *testing.T, file string, methods ...string) openapi.Result {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	doc, err := openapi.Parse(file, b)
	require.NoError(t, err)
	return openapi.Generate(doc, openapi.Options{Methods: methods})
}

func byName(r openapi.Result) map[string]openapi.Endpoint {
	m := map[string]openapi.Endpoint{}
	for _, e := range r.Endpoints {
		m[e.Name] = e
	}
	return m
}

func skips(r openapi.Result) map[string]string {
	m := map[string]string{}
	for _, s := range r.Skipped {
		m[s.Method+" "+s.Path] = s.Reason
	}
	return m
}

// requireSuite checks that what WriteSuite writes of r is a suite that
// parses, with as many endpoints.
func requireSuite(t *testing.T, r openapi.Result) string {
	t.Helper()
	var buf bytes.Buffer
	require.NoError(t, openapi.WriteSuite(&buf, r, openapi.SuiteOptions{Source: "spec.yaml", URL: "http://127.0.0.1:8080"}))
	s, err := suite.Parse("generated", buf.Bytes(), func(string) (string, bool) { return "", false })
	require.NoError(t, err, buf.String())
	if len(r.Endpoints) > 0 {
		require.Len(t, s.Endpoints, len(r.Endpoints))
	}
	return buf.String()
}

func bodyOf(t *testing.T, e openapi.Endpoint) map[string]any {
	t.Helper()
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.Body), &v), e.Body)
	return v
}

func TestRecursiveShapes(t *testing.T) {
	r := generate(t, "testdata/recursive.yaml")
	requireSuite(t, r)
	eps, sk := byName(r), skips(r)

	// The tree's optional self references are left out; {{intent}} goes in
	// a free string member.
	tree := bodyOf(t, eps["createTree"])
	assert.Equal(t, "{{intent}}", tree["label"])
	assert.Equal(t, map[string]any{"name": "example"}, tree["root"])

	// allOf merged through two levels; enum and uuid members filled, not
	// used for the intent.
	folder := bodyOf(t, eps["createFolder"])
	assert.Equal(t, "folder", folder["kind"])
	assert.Equal(t, "00000000-0000-4000-8000-000000000000", folder["ownerId"])
	assert.Equal(t, "{{intent}}", folder["displayName"])
	assert.Equal(t, 400, eps["createFolder"].MismatchStatus)

	// A oneOf whose first alternative recurses through a required member
	// falls to the second; a 3.1 exclusive minimum is kept.
	shape := bodyOf(t, eps["createShape"])
	assert.Equal(t, "circle", shape["type"])
	assert.Equal(t, "{{intent}}", shape["reference"])
	assert.EqualValues(t, 1, shape["radius"])

	// A required member that refers back to its own schema has no finite
	// instance: skipped with the reason, in both forms.
	assert.Contains(t, sk["POST /loops"], "refers back to its own schema")
	mutual := bodyOf(t, eps["createMutual"])
	assert.Equal(t, map[string]any{}, mutual["b"])
}

func TestSkipReasons(t *testing.T) {
	r := generate(t, "testdata/skips.yaml", "POST", "PUT", "DELETE")
	requireSuite(t, r)
	sk := skips(r)
	assert.Contains(t, sk["POST /nobody"], "no request body schema")
	assert.Contains(t, sk["POST /upload"], "multipart body")
	assert.Contains(t, sk["POST /xml"], "body only in application/xml")
	assert.Contains(t, sk["POST /query"], `required query parameter "account" has no example`)
	assert.Contains(t, sk["POST /cookie"], "required cookie parameter")
	assert.Contains(t, sk["POST /enums"], "no free string member")
	assert.Contains(t, sk["DELETE /items/{itemId}"], "no request body schema")
	assert.Len(t, r.Skipped, 7)

	eps := byName(r)
	assert.Contains(t, eps, "ok")
	put := eps["putItem"]
	assert.Equal(t, "/items/item-1", put.Path)
	assert.Equal(t, "X-Idempotency-Key", put.KeyHeader)
	assert.False(t, put.KeyRequired)
	assert.Equal(t, 9, r.Operations)

	// By default only POST and PATCH.
	r = generate(t, "testdata/skips.yaml")
	assert.Equal(t, 2, r.NotAsked)
	out := requireSuite(t, r)
	assert.Contains(t, out, "# Skipped operations (6):")
}

func TestSwagger2(t *testing.T) {
	r := generate(t, "testdata/swagger2.yaml")
	requireSuite(t, r)
	eps := byName(r)
	charge := eps["createCharge"]
	assert.Equal(t, "Request-Key", charge.KeyHeader, "from the x-idempotency-key extension")
	assert.Equal(t, map[string]any{"amount": float64(50), "description": "{{intent}}"}, bodyOf(t, charge))
	assert.Equal(t, 422, charge.MismatchStatus)

	refund := eps["createRefund"]
	assert.Equal(t, "application/x-www-form-urlencoded", refund.ContentType)
	assert.Equal(t, "amount=1&charge={{intent}}", refund.Body)
}

func TestParseRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"swagger: '1.2'\n", `swagger: "1.2" is not a version`},
		{"openapi: 2.5.0\n", `openapi: "2.5.0" is not a version`},
		{"title: x\n", "has no openapi"},
		{"{", "neither YAML nor JSON"},
		{"openapi: 3.0.0\ninfo: {title: x, version: '1'}\npaths:\n  /a:\n    post:\n      requestBody:\n        $ref: 'other.yaml#/x'\n", "not a readable OpenAPI description"},
	} {
		_, err := openapi.Parse("spec.yaml", []byte(c.text))
		require.Error(t, err, c.text)
		assert.Contains(t, err.Error(), c.want)
		assert.NotContains(t, err.Error(), "\n")
	}
}

// randomSpec is a description whose components refer to each other at
// random: $ref cycles, allOf chains, oneOf, arrays of themselves, required
// or not.
func randomSpec(rng *rand.Rand, n int) string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: random, version: '1'}\npaths:\n")
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "  /r%d:\n    post:\n      operationId: op%d\n      requestBody:\n        content:\n          application/json:\n            schema: {$ref: '#/components/schemas/S%d'}\n      responses:\n        '201': {description: ok}\n", i, i, i)
	}
	b.WriteString("components:\n  schemas:\n")
	ref := func() string { return fmt.Sprintf("{$ref: '#/components/schemas/S%d'}", rng.IntN(n)) }
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "    S%d:\n", i)
		switch rng.IntN(4) {
		case 0:
			fmt.Fprintf(&b, "      allOf: [%s, %s]\n", ref(), ref())
		case 1:
			fmt.Fprintf(&b, "      oneOf: [%s, %s]\n", ref(), ref())
		default:
			b.WriteString("      type: object\n")
			var req []string
			b.WriteString("      properties:\n")
			for j := 0; j < 1+rng.IntN(4); j++ {
				name := fmt.Sprintf("p%d", j)
				switch rng.IntN(4) {
				case 0:
					fmt.Fprintf(&b, "        %s: {type: string}\n", name)
				case 1:
					fmt.Fprintf(&b, "        %s: {type: array, minItems: %d, items: %s}\n", name, rng.IntN(3), ref())
				default:
					fmt.Fprintf(&b, "        %s: %s\n", name, ref())
				}
				if rng.IntN(2) == 0 {
					req = append(req, name)
				}
			}
			if len(req) > 0 {
				fmt.Fprintf(&b, "      required: [%s]\n", strings.Join(req, ", "))
			}
		}
	}
	return b.String()
}

// The property: on any graph of references, Generate ends, never panics,
// accounts for every operation, and every body it writes is JSON with
// {{intent}} in it, inside a suite that parses.
func TestRandomReferenceGraphsEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 1))
	for i := 0; i < 200; i++ {
		n := 1 + rng.IntN(12)
		text := randomSpec(rng, n)
		doc, err := openapi.Parse("random.yaml", []byte(text))
		require.NoError(t, err, text)
		r := openapi.Generate(doc, openapi.Options{})
		require.Equal(t, n, len(r.Endpoints)+len(r.Skipped), text)
		for _, e := range r.Endpoints {
			require.True(t, json.Valid([]byte(e.Body)), e.Body)
			require.Contains(t, e.Body, openapi.IntentHole, text)
		}
		requireSuite(t, r)
	}
}

// A description shaped like a large payments API: hundreds of operations
// over shared components with deep $ref chains, form bodies and metadata
// maps. It parses and generates whole.
func TestLargeDescription(t *testing.T) {
	var b strings.Builder
	b.WriteString("openapi: 3.0.0\ninfo: {title: large, version: '1'}\npaths:\n")
	const ops = 400
	for i := 0; i < ops; i++ {
		fmt.Fprintf(&b, "  /v1/things%d:\n    post:\n      operationId: PostThings%d\n      requestBody:\n        content:\n          application/x-www-form-urlencoded:\n            schema: {$ref: '#/components/schemas/Create%d'}\n      responses:\n        '200': {description: ok}\n    get:\n      operationId: GetThings%d\n      parameters:\n        - {name: description, in: query, schema: {type: string}}\n      responses:\n        '200':\n          description: ok\n          content:\n            application/json:\n              schema: {type: object, properties: {object: {type: string}, data: {type: array, items: {$ref: '#/components/schemas/Thing'}}}}\n", i, i, i, i)
	}
	b.WriteString("components:\n  schemas:\n    Thing:\n      type: object\n      properties:\n        id: {type: string}\n        parent: {$ref: '#/components/schemas/Thing'}\n")
	for i := 0; i < ops; i++ {
		fmt.Fprintf(&b, "    Create%d:\n      type: object\n      required: [amount]\n      properties:\n        amount: {type: integer}\n        description: {type: string, maxLength: 5000}\n        metadata: {anyOf: [{type: object, additionalProperties: {type: string}}, {type: string, enum: ['']}]}\n        thing: {$ref: '#/components/schemas/Thing'}\n", i)
	}
	doc, err := openapi.Parse("large.yaml", []byte(b.String()))
	require.NoError(t, err)
	r := openapi.Generate(doc, openapi.Options{})
	require.Len(t, r.Endpoints, ops)
	assert.Equal(t, 2*ops, r.Operations)
	e := r.Endpoints[0]
	assert.Equal(t, "amount=1&description={{intent}}", e.Body)
	require.NotNil(t, e.Effect, "the list filters by description")
	assert.Equal(t, "/data", e.Effect.Count)
	requireSuite(t, r)
}

// FuzzParseGenerate: whatever the text, reading and generating end without
// a panic, and what is written parses as a suite.
func FuzzParseGenerate(f *testing.F) {
	for _, file := range []string{"testdata/recursive.yaml", "testdata/skips.yaml", "testdata/swagger2.yaml", "../../examples/orders/openapi.yaml"} {
		b, err := os.ReadFile(file)
		require.NoError(f, err)
		f.Add(b)
	}
	f.Add([]byte(randomSpec(rand.New(rand.NewPCG(1, 2)), 6)))
	f.Fuzz(func(t *testing.T, b []byte) {
		doc, err := openapi.Parse("fuzz.yaml", b)
		if err != nil {
			return
		}
		r := openapi.Generate(doc, openapi.Options{Methods: openapi.KnownMethods})
		var buf bytes.Buffer
		require.NoError(t, openapi.WriteSuite(&buf, r, openapi.SuiteOptions{Source: "fuzz.yaml", URL: "http://127.0.0.1:1"}))
		if _, err := suite.Parse("generated", buf.Bytes(), func(string) (string, bool) { return "", false }); err != nil {
			t.Fatalf("the written suite does not parse: %v\n%s", err, buf.String())
		}
	})
}

// wideSpec is a description of ops operations that all send one shared
// schema whose every level holds three required members of the next, 11
// levels deep: each operation's generation runs into MaxSteps.
func wideSpec(ops int) string {
	var b strings.Builder
	b.WriteString("openapi: 3.0.3\ninfo: {title: wide, version: '1'}\npaths:\n")
	for i := 0; i < ops; i++ {
		fmt.Fprintf(&b, "  /o%d:\n    post:\n      requestBody:\n        content:\n          application/json:\n            schema: {$ref: '#/components/schemas/S0'}\n      responses:\n        '201': {description: created}\n", i)
	}
	b.WriteString("components:\n  schemas:\n")
	for i := 0; i < 11; i++ {
		next := fmt.Sprintf("{$ref: '#/components/schemas/S%d'}", i+1)
		if i == 10 {
			next = "{type: integer}"
		}
		fmt.Fprintf(&b, "    S%d:\n      type: object\n      required: [a, b, c]\n      properties:\n        a: %s\n        b: %s\n        c: %s\n", i, next, next, next)
	}
	return b.String()
}

// The work on one description is bounded, not only the work on one
// operation: 60 operations over one wide schema would each spend
// MaxSteps (2,000 of them took 37 s, and stalled the fuzzer); past
// MaxDocSteps the operations left are skipped with the reason. Every
// operation is still accounted for. testdata/fuzz/FuzzParseGenerate keeps
// a small one as a seed.
func TestGenerationWorkIsBoundedPerDescription(t *testing.T) {
	const ops = 60
	doc, err := openapi.Parse("wide.yaml", []byte(wideSpec(ops)))
	require.NoError(t, err)
	r := openapi.Generate(doc, openapi.Options{})
	require.Len(t, r.Skipped, ops)
	perOp, whole := 0, 0
	for _, s := range r.Skipped {
		switch {
		case strings.Contains(s.Reason, "more than 20000 schemas visited"):
			perOp++
		case strings.Contains(s.Reason, "the description is too large to generate from whole"):
			whole++
		default:
			t.Errorf("%s %s: %s", s.Method, s.Path, s.Reason)
		}
	}
	assert.Equal(t, openapi.MaxDocSteps/openapi.MaxSteps, perOp, "operations generated within the description's budget")
	assert.Equal(t, ops-openapi.MaxDocSteps/openapi.MaxSteps, whole, "the rest skipped, each after one step")
	requireSuite(t, r)
}
