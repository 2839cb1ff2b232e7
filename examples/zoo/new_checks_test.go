package zoo_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/examples/orders"
	"github.com/idemcheck/idemcheck/examples/payments"
	"github.com/idemcheck/idemcheck/examples/zoo"
	"github.com/idemcheck/idemcheck/targets/mysqltest"
	"github.com/idemcheck/idemcheck/targets/pgtest"
)

// alsoSeenBy are bugs that a new check sees through another door: the
// same kind, for the same reason. dedupe-by-body answers a second key with
// the first key's order whenever the bodies are the same, which is what
// key-syntax's two long keys send.
// A variant that charges its provider without a key does so for every
// request it executes, the corrected one and the two long keys' included.
var alsoSeenBy = map[string]map[string]idemcheck.Kind{
	"orders/" + string(orders.DedupeByBody): {idemcheck.CheckKeySyntax: idemcheck.OverDeduplication},
	"orders/" + string(orders.NoProviderKey): {idemcheck.CheckCorrectedRetry: idemcheck.ProviderCallWithoutKey,
		idemcheck.CheckKeySyntax: idemcheck.ProviderCallWithoutKey},
	"orders/" + string(orders.ChargeAfterCommit): {idemcheck.CheckCorrectedRetry: idemcheck.ProviderCallWithoutKey,
		idemcheck.CheckKeySyntax: idemcheck.ProviderCallWithoutKey},
	// Every job of the payments API is retried once, and an unkeyed
	// worker writes a second payment for each request it executes.
	"payments/" + string(payments.UnkeyedEffect): {idemcheck.CheckCorrectedRetry: idemcheck.DuplicateEffect,
		idemcheck.CheckKeySyntax: idemcheck.DuplicateEffect},
}

// corrected-retry and key-syntax, on every entry of the zoo: each finds its
// own variant's bug, applies or skips with a reason, and finds nothing else.
func TestNewChecksOnEveryEntry(t *testing.T) {
	b := bins(t)
	checks := []string{idemcheck.CheckCorrectedRetry, idemcheck.CheckKeySyntax}
	for _, e := range zoo.Entries() {
		if e.Scheme != "" {
			// The signed reference under another preset: a consumer's
			// key is in the body, so both checks skip it, as they skip
			// webhooks-signed/reference.
			continue
		}
		t.Run(e.Name(), func(t *testing.T) {
			if e.App == "ordersmysql" {
				mysqltest.NeedBinary(t)
			}
			// A database of its own, as `make zoo` gives every run: the
			// orders and payments examples both have a payments table, and
			// the one made first would stay, with the other's columns.
			res, err := b.Certify(context.Background(), e, zoo.Config{Checks: checks, Options: zoo.Options(), DSN: pgtest.DSN(t)})
			require.NoError(t, err)
			row := zoo.NewRow(e, res.Report)
			for _, c := range checks {
				want := map[idemcheck.Kind]bool{}
				if e.Check == c {
					want[idemcheck.Kind(e.Anomaly)] = true
				}
				if k, ok := alsoSeenBy[e.Name()][c]; ok {
					want[k] = true
				}
				got := map[idemcheck.Kind]bool{}
				for _, k := range row.Found[c] {
					if k == idemcheck.LateDuplicateEffect && want[idemcheck.DuplicateEffect] {
						k = idemcheck.DuplicateEffect // the same bug, its second effect later (zoo.SameCatch)
					}
					got[k] = true
				}
				assert.Equal(t, want, got, "%s: anomalies of %s", e.Name(), c)
				if e.App == "webhooks" {
					assert.Contains(t, row.Skipped[c], "key_pointer", "a consumer's key is in the body")
				} else {
					assert.NotContains(t, row.Skipped, c)
				}
			}
			for _, a := range res.Report.Anomalies {
				t.Logf("%s in %s: %s", a.Kind, a.Check, a.Explanation)
			}
			if t.Failed() && res.History != nil {
				// What the counts were, and when: a late effect missed
				// shows here.
				for _, o := range slices.Concat(res.History.Observations, res.History.Recounts) {
					settle := "none"
					if o.Settle != nil {
						settle = fmt.Sprintf("%+v", *o.Settle)
					}
					t.Logf("observation %s recount=%v at %s: %d effects, settle %s", o.Intent, o.Recount, o.At.Format("15:04:05.000"), o.Effects, settle)
				}
				for _, a := range res.History.Attempts {
					t.Logf("attempt %s (%s step %d) status %d, ended %s", a.Intent, a.Check, a.Step, a.Status, a.End.Format("15:04:05.000"))
				}
			}
		})
	}
}
