package render

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/idemcheck/idemcheck"
)

// A provider anomaly shows the target's calls to the provider as its
// evidence, in the terminal and in Markdown.
func TestProviderCallsAreShown(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	r := report()
	r.Anomalies = []idemcheck.Anomaly{{Kind: idemcheck.ProviderDuplicateCharge, Check: "failed-attempt", Intent: "ic-1", Key: "k",
		Explanation: "one client intent caused 2 charges", Attempts: []int{1, 2},
		Calls: []idemcheck.ProviderCall{
			{Provider: "PROVIDER_URL", Seq: 3, Method: "POST", Path: "/v1/charges", Key: "fresh-1", Body: `{"amount":4000}`, Start: at, End: at, Status: 200, Created: true, Charge: "ch_000003", Mapped: idemcheck.MappedByID},
			{Provider: "PROVIDER_URL", Seq: 4, Method: "POST", Path: "/v1/charges", Start: at, End: at, Status: 200, Created: true, Charge: "ch_000004", Mapped: idemcheck.MappedByWindow, Fault: "provider-5xx"},
		}}}
	r.Checks[0].Anomalies = []int{0}
	r.Checks[0].Provider = &idemcheck.ProviderTraffic{Calls: 7, Charges: 6, CallsPerIntent: 1.4, MaxCallsPerIntent: 3}
	var b bytes.Buffer
	WriteText(&b, r, false)
	assert.Contains(t, b.String(), "5 intents, 160 attempts, provider: 1.4 calls per intent (max 3), 6 charges, 1 anomalies")
	assert.Contains(t, b.String(), `Provider call 3 to PROVIDER_URL POST /v1/charges, key fresh-1: charged ch_000003; body {"amount":4000}`)
	assert.Contains(t, b.String(), "Provider call 4 to PROVIDER_URL POST /v1/charges, no key: charged ch_000004 under provider-5xx (named no intent: tied by its time)")
	b.Reset()
	assert.NoError(t, WriteMarkdown(&b, []idemcheck.Report{r}))
	assert.Contains(t, b.String(), "Provider call 3 to PROVIDER_URL POST /v1/charges, key fresh-1: charged ch_000003")
}
