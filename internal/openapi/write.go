package openapi

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// SuiteOptions say what the written suite's header holds.
type SuiteOptions struct {
	// Source is the description's file or URL, for the header comment.
	Source string
	// URL is the target's base URL; empty writes ${TARGET_URL}.
	URL string
}

// WriteSuite writes r as a suite file (the format of internal/suite): one
// endpoint per certifiable operation, with comments saying where each part
// came from and what is left to fill in, and the skipped operations with
// their reasons at the end.
func WriteSuite(w io.Writer, r Result, o SuiteOptions) error {
	b := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	title := strings.TrimSpace(r.Title + " " + r.Version)
	if title == "" {
		title = "an untitled API"
	}
	p("# An idemcheck suite written by `idemcheck init` from %s", comment(o.Source))
	p("# (%s, OpenAPI %s).", comment(title), comment(r.OpenAPI))
	p("#")
	p("# %d operations in the description: %d endpoints to certify, %d skipped (listed", r.Operations, len(r.Endpoints), len(r.Skipped))
	p("# at the end with the reason), %d of methods not asked for.", r.NotAsked)
	p("#")
	p("# Still to check by hand:")
	p("#  - each body is the description's example or a minimal valid instance of its")
	p("#    schema, with {{intent}} in one string member so each intent's effects can")
	p("#    be found; idemcheck run sends it once first and reports an endpoint whose")
	p("#    body the target does not accept with a 2xx;")
	p("#  - effects: without an effect block a verdict rests on the wire alone. Give")
	p("#    effect.http (a GET of the API that counts one intent's effects) or")
	p("#    effect.sql (with db under target) where none was found;")
	p("#  - credentials go under target.headers, from the environment: ${API_TOKEN}.")
	p("version: 1")
	p("")
	p("target:")
	if o.URL != "" {
		p("  url: %s", quote(o.URL))
	} else {
		p("  url: ${TARGET_URL}")
	}
	p("  # headers:")
	p("  #   Authorization: Bearer ${API_TOKEN}")
	p("")
	p("policy:")
	p("  preset: ietf")
	p("")
	if len(r.Endpoints) == 0 {
		p("# No operation could be certified: see the reasons below. A suite needs at")
		p("# least one endpoint, so this one is an example to edit.")
		p("endpoints:")
		p("  - name: example")
		p("    method: POST")
		p("    path: /replace-me")
		p("    body: '{\"reference\":\"{{intent}}\"}'")
	} else {
		p("endpoints:")
	}
	for _, e := range r.Endpoints {
		p("  - name: %s", quote(e.Name))
		p("    method: %s", e.Method)
		p("    path: %s", quote(e.Path))
		p("    # body: %s; {{intent}} at %s.", e.BodyFrom, comment(e.IntentAt))
		p("    body: %s", singleQuote(e.Body))
		if len(e.Headers) > 0 || e.ContentType != mediaJSON {
			p("    headers:")
			if e.ContentType != mediaJSON {
				p("      Content-Type: %s", quote(e.ContentType))
			}
			for _, h := range e.Headers {
				p("      %s: %s", h[0], quote(h[1]))
			}
		}
		p("    # key header: %s.", comment(e.KeyFrom))
		p("    policy:")
		p("      key_header: %s", e.KeyHeader)
		if len(e.CreatedStatuses) > 0 {
			p("      # the success statuses the description declares")
			p("      created_statuses: %s", ints(e.CreatedStatuses))
		}
		if e.MismatchStatus != 0 {
			p("      # a reused key with another payload: %s", comment(e.MismatchFrom))
			p("      mismatch_status: %d", e.MismatchStatus)
		}
		if e.ReplayHeader != "" {
			p("      # a success declares this header: it marks a replay")
			p("      replay_header: %s", e.ReplayHeader)
		}
		if e.KeyDeclared && !e.KeyRequired {
			p("      # the description makes the key optional: no status is due without one")
			p("      missing_key_status: 0")
		}
		if !e.Declares409 {
			p("      # the description declares no 409 for a concurrent duplicate; the IETF draft's 409 is expected")
		}
		if e.Other != "" {
			p("    # the same key sent to another operation must not get this one's saved answer")
			p("    cross_endpoint:")
			p("      path: %s", quote(e.Other))
		}
		if e.Effect != nil {
			p("    # effects counted through the API: %s filters by the member that holds {{intent}}", comment(e.Effect.From))
			p("    effect:")
			p("      http: %s", quote("GET "+e.Effect.Path))
			p("      count: %s", quote(e.Effect.Count))
		} else {
			p("    # effect: {http: \"GET /list?field={{intent}}\", count: /data}  or  {sql: \"SELECT count(*) ... = $1\", args: [\"{{intent}}\"]}")
		}
		for _, n := range e.Notes {
			p("    # note: %s", comment(n))
		}
	}
	if len(r.Skipped) > 0 {
		p("")
		p("# Skipped operations (%d):", len(r.Skipped))
		for _, s := range r.Skipped {
			id := ""
			if s.OperationID != "" {
				id = " (" + s.OperationID + ")"
			}
			p("#   %s %s%s: %s", s.Method, comment(s.Path), comment(id), comment(s.Reason))
		}
	}
	return b.Flush()
}

// quote writes s as a YAML double-quoted scalar (a JSON string is one),
// with "$" doubled, since a suite expands ${NAME} in every string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return strings.ReplaceAll(string(b), "$", "$$")
}

// singleQuote writes s as a YAML single-quoted scalar, with "$" doubled;
// s is one line (compact JSON, a form).
func singleQuote(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, "'", "''"), "$", "$$") + "'"
}

// comment keeps text on one comment line.
func comment(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func ints(v []int) string {
	parts := make([]string, len(v))
	for i, n := range v {
		parts[i] = fmt.Sprint(n)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
