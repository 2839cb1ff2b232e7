package orders

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// The payment provider. With Config.Provider set (PROVIDER_URL for the
// command), an approved order or payment is charged there, inside the work
// transaction, before the effect is written: the provider's charge id is
// stored in the order's row, in the same transaction as the order and the
// saved reply.
//
// The provider call cannot be rolled back with the transaction, so what
// makes it safe is the key it carries: one derived from the client's
// Idempotency-Key (and the client, and the kind of request), the same for
// every attempt of the intent. An attempt that charged and then failed
// (its database link cut, its process killed, its own reply from the
// provider lost) leaves the charge at the provider; the retry, under the
// same client key, sends the same provider key and gets that charge
// replayed, and stores it with the order this time. The charge happens
// once whatever fails, and is reconciled by the retry. A provider failure
// (5xx, a timeout, a cut reply) is retried here with the same key, a few
// times; if it persists, the work fails, nothing is written, the claim is
// released and the client's own retry tries again, with the same key.

// ProviderEnv is the variable the command reads the provider's base URL
// from.
const ProviderEnv = "PROVIDER_URL"

// providerTimeout bounds one call to the provider, and providerTries how
// many calls one attempt makes before it gives up, unless
// Config.ProviderTries says otherwise.
const (
	providerTimeout = 2 * time.Second
	providerTries   = 3
)

var providerClient = &http.Client{Timeout: providerTimeout}

// requestIDKey is the context key of the id of one HTTP request: one
// attempt, not the intent (see withRequestID).
type requestIDKey struct{}

// withRequestID gives each HTTP request its own id, as a request-id
// middleware does: for logs, and for nothing that must be the same on
// the request's retry.
func withRequestID(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), requestIDKey{}, uuid.NewString()))
}

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// providerKey is the reference's key for the provider: derived from the
// client, the kind of request and the client's key, so every attempt of
// one intent sends the same key, and no other intent's.
func providerKey(_ context.Context, req request) string {
	h := sha256.New()
	h.Write(req.client)
	h.Write([]byte{0})
	h.Write([]byte(req.op.kind))
	h.Write([]byte{0})
	h.Write([]byte(req.key))
	return "orders-" + hex.EncodeToString(h.Sum(nil))[:40]
}

// errProvider is a provider call that did not end in a charge.
var errProvider = errors.New("orders: payment provider")

// pay charges req at the provider under key ("" sends none) and returns the
// charge's id. It retries transport failures and 5xx with the same key.
func (s *Server) pay(ctx context.Context, req request, key string) (string, error) {
	body, err := json.Marshal(map[string]any{
		"amount": req.op.cents, "currency": "usd",
		"description": string(req.op.kind) + " for " + req.op.payer(),
		// The customer (or the order) the charge is for: the provider's
		// dashboard shows it, and a reconciliation matches on it.
		"metadata": map[string]string{"payer": req.op.payer()},
	})
	if err != nil {
		return "", err
	}
	var last error
	tries := s.cfg.ProviderTries
	if tries <= 0 {
		tries = providerTries
	}
	for try := range tries {
		if try > 0 {
			select {
			case <-ctx.Done():
				return "", ctx.Err()
			case <-time.After(time.Duration(try) * 50 * time.Millisecond):
			}
		}
		id, retry, err := s.payOnce(ctx, body, key)
		if err == nil {
			return id, nil
		}
		last = err
		if !retry {
			break
		}
	}
	return "", last
}

// payOnce makes one call; retry says whether the failure is worth another
// call with the same key (a transport failure, a timeout, a 5xx).
func (s *Server) payOnce(ctx context.Context, body []byte, key string) (id string, retry bool, err error) {
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.Provider+"/v1/charges", bytes.NewReader(body))
	if err != nil {
		return "", false, err
	}
	hr.Header.Set("Content-Type", "application/json")
	if key != "" {
		hr.Header.Set("Idempotency-Key", key)
	}
	resp, err := providerClient.Do(hr)
	if err != nil {
		return "", ctx.Err() == nil, fmt.Errorf("%w: %v", errProvider, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return "", resp.StatusCode >= 500, fmt.Errorf("%w answered %d: %s", errProvider, resp.StatusCode, bytes.TrimSpace(b))
	}
	var ch struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &ch); err != nil || ch.ID == "" {
		return "", false, fmt.Errorf("%w answered %d without a charge id", errProvider, resp.StatusCode)
	}
	return ch.ID, false, nil
}

// chargeAfterWork is the work of a variant that charges once the order
// committed (bug_charge_after_commit.go): the charge is made apart from
// the order, its id never stored.
func (s *Server) chargeAfterWork(ctx context.Context, req request, token string) (reply, error) {
	rep, err := s.work(ctx, req, token)
	if err != nil || rep.status != http.StatusCreated || s.cfg.Provider == "" {
		return rep, err
	}
	if _, err := s.pay(ctx, req, s.st.providerKey(ctx, req)); err != nil {
		slog.Warn("orders: the charge after the order failed", "err", err)
	}
	return rep, nil
}
