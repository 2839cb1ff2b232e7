package bench_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/idemcheck/idemcheck"
)

// burstSize is the attempts per intent of the synthetic histories: one
// concurrent-burst round each, as the default check sends.
const burstSize = 32

// sizes are the history sizes, in attempts, that show how cost grows.
var sizes = []int{10_000, 100_000, 1_000_000}

var (
	historiesMu sync.Mutex
	histories   = map[int]*idemcheck.History{}
)

// history returns a synthetic history of n attempts, built once per size
// and process: building 1,000,000 attempts takes longer than checking them.
// Every tenth intent shows the check-then-insert race (three 201s with three
// order ids and three effects), every fiftieth has a reply cut short; the
// rest is a correct burst (one 201, thirty-one 409s, one effect).
func history(tb testing.TB, n int) *idemcheck.History {
	tb.Helper()
	historiesMu.Lock()
	defer historiesMu.Unlock()
	if h := histories[n]; h != nil {
		return h
	}
	h := &idemcheck.History{
		Run: idemcheck.Run{
			Seed:        1,
			Target:      idemcheck.Target{URL: "http://127.0.0.1:8080", Method: "POST", Path: "/orders"},
			Policy:      idemcheck.IETF(),
			Checks:      []idemcheck.PlannedCheck{{Name: idemcheck.CheckConcurrentBurst}},
			EffectQuery: "SELECT count(*) FROM orders WHERE customer_id = $1",
		},
	}
	intents := n / burstSize
	h.Intents = make([]idemcheck.Intent, 0, intents)
	h.Attempts = make([]idemcheck.Attempt, 0, intents*burstSize)
	respHeader := http.Header{"Content-Type": {"application/json"}}
	conflict := `{"type":"about:blank","title":"Conflict","status":409,"detail":"a request with this Idempotency-Key is in progress"}`
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := range intents {
		id := fmt.Sprintf("ic-5eed0001-%d", k+1)
		in := idemcheck.Intent{ID: id, Key: uuidOf(id), Seq: k + 1, Check: idemcheck.CheckConcurrentBurst, Round: k%5 + 1}
		h.Intents = append(h.Intents, in)
		body := `{"customerId":"` + id + `","totalCents":4000,"currency":"EUR","items":[{"sku":"A-1","qty":2}]}`
		header := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {in.Key}}
		fp := uuidOf(body)[:16]
		racy := k%10 == 9
		created := 1
		if racy {
			created = 3
		}
		base := t0.Add(time.Duration(k) * 2 * time.Millisecond)
		burst := idemcheck.Burst{ID: k + 1, Attempts: burstSize, Spread: 200 * time.Microsecond}
		h.Bursts = append(h.Bursts, burst)
		for j := range burstSize {
			a := idemcheck.Attempt{
				ID: len(h.Attempts) + 1, Intent: id, Key: in.Key, Check: in.Check, Round: in.Round, Step: 1, Burst: burst.ID,
				Method: "POST", Path: "/orders", Header: header, Body: body, Fingerprint: fp,
				Start: base.Add(time.Duration(j) * 7 * time.Microsecond),
				End:   base.Add(300*time.Microsecond + time.Duration(j)*15*time.Microsecond),
			}
			a.FirstByte = a.End.Add(-5 * time.Microsecond)
			switch {
			case j < created:
				a.Outcome, a.Status, a.RespHeader = idemcheck.Replied, 201, respHeader
				a.RespBody = `{"orderId":"` + uuidOf(fmt.Sprint(id, j)) + `","customerId":"` + id + `","totalCents":4000,"status":"created"}`
			case k%50 == 49 && j == burstSize-1:
				a.Outcome, a.Error = idemcheck.Unknown, "malformed HTTP response"
			default:
				a.Outcome, a.Status, a.RespHeader, a.RespBody = idemcheck.Replied, 409, respHeader, conflict
			}
			h.Attempts = append(h.Attempts, a)
		}
		h.Observations = append(h.Observations, idemcheck.Observation{
			Intent: id, Check: in.Check, Effects: int64(created), Query: h.Run.EffectQuery, Args: []string{id},
		})
	}
	histories[n] = h
	return h
}

// uuidOf derives a stable UUID-shaped string from s.
func uuidOf(s string) string {
	sum := sha256.Sum256([]byte(s))
	x := hex.EncodeToString(sum[:16])
	return x[:8] + "-" + x[8:12] + "-4" + x[13:16] + "-a" + x[17:20] + "-" + x[20:32]
}

// perAttempt reports the time per attempt, the figure that must stay flat
// across sizes for the cost to stay linear.
func perAttempt(b *testing.B, attempts int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(attempts), "ns/attempt")
}

// countingWriter counts what is written to it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*countingWriter)(nil)
