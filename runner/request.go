package runner

import (
	"encoding/json"
	"net/http"

	"github.com/google/uuid"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/wire"
	"github.com/idemcheck/idemcheck/scenarios"
)

// request fills the endpoint's templates for one intent and applies the
// variant; it returns the request and the key it carries ("" for none).
func (s *session) request(in idemcheck.Intent, v idemcheck.Variant) (wire.Request, string) {
	e := s.Endpoint
	// The id a signature signs is the event's: a request sent without
	// its key (missing-key) is still signed as the sender would sign
	// the event, so that the consumer judges the body, not the signature.
	signID := in.Key
	switch v {
	case idemcheck.OtherKey:
		in.Key = uuid.NewString() // every template sees the new key
	case idemcheck.NoKey, idemcheck.EmptyKey:
		in.Key = ""
	case idemcheck.OverlongKey:
		in.Key = scenarios.OverlongKey(in.Key)
	case idemcheck.ListKey:
		in.Key = scenarios.ListKey(in.Key)
	case idemcheck.LongKey:
		in.Key = scenarios.LongKey(in.Key, 'a')
	case idemcheck.LongKeyTwin:
		in.Key = scenarios.LongKey(in.Key, 'b')
	}
	// The body and path are computed once per step: every attempt of it,
	// and every redelivery, sends the same bytes, as a sender resends an
	// event. Headers that are computed are computed per attempt (finish).
	sd := idemcheck.Send{Now: e.Clock()}
	method, body := e.Method, e.Body.FillAt(in, sd)
	switch v {
	case idemcheck.OtherBody:
		if e.MismatchBody != nil {
			body = e.MismatchBody.Fill(in)
		} else {
			body = scenarios.MutateBody(body, in)
		}
	case idemcheck.Reordered:
		body = scenarios.ReorderBody(body)
	case idemcheck.OtherEndpoint:
		method = e.Other.Method
		if e.Other.Body != nil {
			body = e.Other.Body.Fill(in)
		}
	case idemcheck.NoKey:
		if ptr := s.Policy.KeyPointer; ptr != "" {
			body = scenarios.RemoveMember(body, ptr)
		}
	case idemcheck.Failing:
		body = e.FailingBody.Fill(in)
	case idemcheck.InvalidBody:
		body = e.InvalidBodyFor(in)
	}
	sd.Body = []byte(body)
	pathT := e.Path
	if v == idemcheck.OtherEndpoint {
		pathT = e.Other.Path
	}
	path := pathT.FillAt(in, sd)
	hdr := http.Header{}
	var computed []scenarios.Header
	for _, h := range e.Header {
		if h.Value.Computed() {
			computed = append(computed, h)
			continue
		}
		hdr.Add(h.Name, h.Value.Fill(in))
	}
	switch {
	case v == idemcheck.TenantA && len(e.Tenants) == 2:
		hdr.Set(e.Tenants[0].Name, e.Tenants[0].Value.Fill(in))
	case v == idemcheck.OtherTenant && len(e.Tenants) == 2:
		hdr.Set(e.Tenants[1].Name, e.Tenants[1].Value.Fill(in))
	}
	if body != "" && hdr.Get("Content-Type") == "" && json.Valid([]byte(body)) {
		hdr.Set("Content-Type", "application/json")
	}
	// A key carried in the body (a webhook's event id) needs no header.
	switch {
	case v == idemcheck.EmptyKey:
		hdr.Set(s.Policy.KeyHeader, "") // present, with nothing in it
	case in.Key != "" && s.Policy.KeyPointer == "":
		hdr.Set(s.Policy.KeyHeader, in.Key)
	default:
		hdr.Del(s.Policy.KeyHeader)
	}
	if in.Key != "" {
		signID = in.Key
	}
	return wire.Request{Method: method, Path: path, Header: hdr, Body: []byte(body), Finish: s.finish(in, v, signID, computed)}, in.Key
}

// finish returns what computes a request's per-attempt parts at send time
// (wire.Request.Finish): the computed headers over the exact body sent,
// then the signature, with a fresh timestamp each time; nil when there
// are none. The event id a scheme signs (id) is the intent's key, which a
// redelivery keeps.
func (s *session) finish(in idemcheck.Intent, v idemcheck.Variant, id string, computed []scenarios.Header) func(wire.Request) wire.Request {
	e := s.Endpoint
	if len(computed) == 0 && e.Sign == nil {
		return nil
	}
	return func(r wire.Request) wire.Request {
		h := r.Header.Clone()
		sd := idemcheck.Send{Now: e.Clock(), Body: r.Body}
		for _, c := range computed {
			h.Add(c.Name, c.Value.FillAt(in, sd))
		}
		if e.Sign != nil {
			g := *e.Sign
			switch v {
			case idemcheck.BadSignature:
				g = g.Forged()
			case idemcheck.StaleSignature:
				sd.Now = sd.Now.Add(-scenarios.StaleAge)
			}
			g.Sign(h, id, r.Body, sd.Now)
			if !s.soak {
				// A reply that echoes this attempt's signature hides it
				// too. A soak's attempts are too many to learn each.
				s.secret().LearnHeader(e.Sign.SignatureHeader(), h.Get(e.Sign.SignatureHeader()))
			}
		}
		r.Header = h
		return r
	}
}
