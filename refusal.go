package idemcheck

import (
	"net/http"
	"strings"
)

// IsRefusal reports whether a reply of status with header h is a refusal
// before the handler: a 429 (Too Many Requests), or a 503 that carries
// Retry-After (a rate limiter or a load shedder saying "not now"). A
// refusal is not a conflict: it says nothing about the key, since the
// request never reached the idempotency layer, so it proves nothing about
// concurrency and is never judged as an answer. That holds whatever the
// policy declares: a policy that lists 429 among its in-progress statuses
// does not make a refused attempt count as one that met another.
func IsRefusal(status int, h http.Header) bool {
	switch status {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		return strings.TrimSpace(h.Get("Retry-After")) != ""
	}
	return false
}

// Refusal reports whether the attempt was answered with a refusal before
// the handler (IsRefusal).
func (a Attempt) Refusal() bool {
	return a.Outcome == Replied && IsRefusal(a.Status, a.RespHeader)
}

// Admitted reports whether the attempt is known to have reached the
// target's handler: it was answered with anything but a refusal (executed,
// or answered by the idempotency layer as in progress, a replay or a
// rejection).
func (a Attempt) Admitted() bool { return a.Outcome == Replied && !a.Refusal() }
