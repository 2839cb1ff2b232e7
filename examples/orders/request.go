package orders

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/idemcheck/idemcheck/examples/apikit"
)

// endpoint is one POST route and the bodies it takes.
type endpoint struct {
	path string
	// parse turns the decoded body into an operation, or returns the
	// problem to answer 400 with.
	parse func(fields map[string]any) (operation, string)
}

var endpoints = []endpoint{
	{"/orders", parseOrder},
	{"/payments", parsePayment},
}

// kind is what an operation creates.
type kind string

const (
	orderKind   kind = "order"
	paymentKind kind = "payment"
)

// operation is what a request asks for: one order or one payment.
type operation struct {
	kind kind
	// customerID is the order's customer, or the customer a payment on
	// account is charged to.
	customerID string
	// orderRef is the order a payment pays; empty for a payment on account.
	orderRef string
	// cents is an order's totalCents or a payment's amount.
	cents int64
}

// payer is who the processor stand-in charges (processor.go).
func (op operation) payer() string {
	if op.orderRef != "" {
		return "order:" + op.orderRef
	}
	return "customer:" + op.customerID
}

// request is a validated POST /orders or POST /payments.
type request struct {
	// key is the Idempotency-Key; empty only when a variant lets a
	// request without one through.
	key string
	// client scopes the key: the SHA-256 of the Authorization header, or
	// empty (never nil: pgx would store NULL) when there is none.
	client      []byte
	fingerprint []byte
	op          operation
}

const (
	maxTextLen = 255 // for keys, Stripe's limit; keeps the primary key index small
	maxBodyLen = 64 << 10
)

// storable reports whether PostgreSQL will take s as text. A value it would
// refuse must be a 400 here, not a 500 from the database later.
func storable(s string) bool {
	return len(s) <= maxTextLen && utf8.ValidString(s) && !strings.ContainsRune(s, 0)
}

// keySyntax reports whether key is one key as the IETF draft writes it (a
// Structured Field string: printable ASCII). A comma makes the header a
// list of keys, which a request must not carry; a store that took it would
// key the request on a value its retries may send split or reordered.
func keySyntax(key string) bool {
	for i := 0; i < len(key); i++ {
		if c := key[i]; c < 0x20 || c > 0x7e || c == ',' {
			return false
		}
	}
	return true
}

// rejectRequest answers 400 to a request whose body fails validation, and
// saves nothing: no work began, so there is no outcome for the key to keep,
// and the client may correct the body and send it again with its key
// (Stripe: nothing is saved when validation fails).
func rejectRequest(_ *Server, w http.ResponseWriter, _ *http.Request, _ string, _ []byte, problem string) {
	writeProblem(w, http.StatusBadRequest, problem)
}

// ReceivedHeader is the reply header that says when the API had read the
// whole request, by its own clock (RFC 3339 with nanoseconds): idemcheck's
// --arrival-header reads it.
const ReceivedHeader = "X-Received-At"

// parseRequest validates the request, or answers 400 and returns false.
// Nothing is stored for an invalid request, so fixing it and retrying with
// the same key works.
func (s *Server) parseRequest(w http.ResponseWriter, r *http.Request, ep endpoint) (request, bool) {
	keys := r.Header.Values("Idempotency-Key")
	keyless := len(keys) == 0 && s.st.keyOptional
	if !keyless && (len(keys) != 1 || keys[0] == "") {
		writeProblem(w, http.StatusBadRequest, "exactly one non-empty Idempotency-Key header is required")
		return request{}, false
	}
	key := ""
	if !keyless {
		key = keys[0]
	}
	if !storable(key) {
		writeProblem(w, http.StatusBadRequest, fmt.Sprintf("Idempotency-Key must be UTF-8 text of at most %d bytes", maxTextLen))
		return request{}, false
	}
	if !keySyntax(key) {
		writeProblem(w, http.StatusBadRequest, "Idempotency-Key must be one key of printable ASCII characters, without commas")
		return request{}, false
	}

	// Read the whole body before touching the database: a request cut
	// short by the network must leave no trace.
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyLen))
	if err != nil {
		s.st.reject(s, w, r, key, raw, "cannot read the request body: "+err.Error())
		return request{}, false
	}
	// When the whole request was in: a client that releases a burst of
	// copies together can tell from it how tightly they arrived.
	w.Header().Set(ReceivedHeader, time.Now().UTC().Format(time.RFC3339Nano))
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber() // keep numbers exactly as written, for the fingerprint
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil || fields == nil {
		s.st.reject(s, w, r, key, raw, "the body must be a JSON object")
		return request{}, false
	}
	if _, err := dec.Token(); err != io.EOF {
		s.st.reject(s, w, r, key, raw, "the body must hold exactly one JSON value")
		return request{}, false
	}
	op, problem := ep.parse(fields)
	if problem != "" {
		s.st.reject(s, w, r, key, raw, problem)
		return request{}, false
	}

	return request{
		key:         s.st.storedKey(key),
		client:      s.st.client(r),
		fingerprint: s.st.fingerprint(r.Method, r.URL.Path, raw, fields),
		op:          op,
	}, true
}

// parseOrder reads {"customerId": string, "totalCents": integer}.
func parseOrder(fields map[string]any) (operation, string) {
	if p := onlyFields(fields, "customerId", "totalCents"); p != "" {
		return operation{}, p
	}
	customerID, p := textField(fields, "customerId")
	if p != "" {
		return operation{}, p
	}
	cents, p := centsField(fields, "totalCents")
	if p != "" {
		return operation{}, p
	}
	return operation{kind: orderKind, customerID: customerID, cents: cents}, ""
}

// parsePayment reads {"orderRef": string, "amountCents": integer}, a payment
// for an order, or {"customerId": string, "totalCents": integer}, a payment
// on account: the customer is charged without naming an order. The second
// shape is also an order's shape, which is what lets idemcheck's
// cross-endpoint check send an order's key and body to /payments unchanged
// and see whether the key store tells the two endpoints apart.
func parsePayment(fields map[string]any) (operation, string) {
	_, hasRef := fields["orderRef"]
	_, hasAmount := fields["amountCents"]
	_, hasCustomer := fields["customerId"]
	_, hasTotal := fields["totalCents"]
	switch {
	case hasRef || hasAmount:
		if p := onlyFields(fields, "orderRef", "amountCents"); p != "" {
			return operation{}, p
		}
		ref, p := textField(fields, "orderRef")
		if p != "" {
			return operation{}, p
		}
		cents, p := centsField(fields, "amountCents")
		if p != "" {
			return operation{}, p
		}
		return operation{kind: paymentKind, orderRef: ref, cents: cents}, ""
	case hasCustomer || hasTotal:
		op, p := parseOrder(fields)
		op.kind = paymentKind
		return op, p
	}
	return operation{}, `a payment is {"orderRef", "amountCents"} or, on account, {"customerId", "totalCents"}`
}

// onlyFields returns a problem naming the first field not in names.
func onlyFields(fields map[string]any, names ...string) string {
	for name := range fields {
		if !slices.Contains(names, name) {
			return fmt.Sprintf("unknown field %q", name)
		}
	}
	return ""
}

func textField(fields map[string]any, name string) (string, string) {
	v, ok := fields[name].(string)
	if !ok || v == "" || !storable(v) {
		return "", fmt.Sprintf("%s must be a non-empty string of at most %d bytes", name, maxTextLen)
	}
	return v, ""
}

func centsField(fields map[string]any, name string) (int64, string) {
	n, _ := fields[name].(json.Number)
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v <= 0 {
		return 0, name + " must be a positive integer"
	}
	return v, ""
}

// fingerprint identifies the intent behind a request, so that a key reused
// for a different request is caught (422) instead of replaying an answer to
// a question that was not asked. The method and path are part of it
// because one key table serves both endpoints: an order's key sent to
// /payments is a different request. The body enters as canonical JSON, so
// member order and whitespace do not matter.
func fingerprint(method, path string, _ []byte, body map[string]any) []byte {
	return digest([]byte(method), []byte(path), canonical(body))
}

// canonical is the body's meaning as bytes: encoding/json writes map keys
// sorted and json.Number exactly as it was written.
func canonical(body map[string]any) []byte {
	b, err := json.Marshal(body)
	if err != nil {
		panic(err) // cannot happen: body was just decoded from JSON
	}
	return b
}

// digest hashes parts with a separator, so "a"+"bc" differs from "ab"+"c".
func digest(parts ...[]byte) []byte {
	h := sha256.New()
	for _, part := range parts {
		h.Write(part)
		h.Write([]byte{0})
	}
	return h.Sum(nil)
}

// clientScope is whose key table a request's key belongs to. The example
// has no accounts, so the Authorization header stands for the caller; it is
// stored hashed, never as the credential itself. Without the header the
// caller is the anonymous client (empty scope).
func clientScope(r *http.Request) []byte {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return []byte{}
	}
	h := sha256.Sum256([]byte(strings.Join(vals, "\n")))
	return h[:]
}

// reply is an HTTP answer; a finished key stores the one it gave.
type reply struct {
	status      int
	contentType string
	body        []byte
}

// write sends the reply. A replay is marked so that a client (and
// idemcheck) can tell it apart from a fresh result.
func (rp reply) write(w http.ResponseWriter, replayed bool) {
	w.Header().Set("Content-Type", rp.contentType)
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(rp.status)
	_, _ = w.Write(rp.body)
}

// problem is an RFC 7807 problem document.
func problem(status int, detail string) reply {
	return reply{status, apikit.ProblemContentType, apikit.Problem(status, detail)}
}

// writeProblem answers with an RFC 7807 problem document.
func writeProblem(w http.ResponseWriter, status int, detail string) {
	problem(status, detail).write(w, false)
}

// writeConflict answers 409 to a duplicate that arrived while the first
// copy is still being worked on.
func writeConflict(w http.ResponseWriter, retryAfter int) {
	w.Header().Set("Retry-After", strconv.Itoa(max(retryAfter, 1)))
	writeProblem(w, http.StatusConflict, "a request with this Idempotency-Key is in progress; retry later")
}

// writeMismatch answers 422 to a key reused for another request.
func writeMismatch(w http.ResponseWriter) {
	writeProblem(w, http.StatusUnprocessableEntity, "this Idempotency-Key was already used with a different request")
}

// writeInternal answers 500 without leaking internals to the client.
func writeInternal(w http.ResponseWriter, r *http.Request, err error) {
	slog.ErrorContext(r.Context(), "orders: request failed", "err", err)
	writeProblem(w, http.StatusInternalServerError, "the request could not be processed; retrying with the same Idempotency-Key is safe")
}
