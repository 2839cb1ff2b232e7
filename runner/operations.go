package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/wire"
)

// An API that answers 202 Accepted often says where the operation's
// status can be read (RFC 9110 section 15.3.3: the reply "ought to ...
// point to a status monitor"), in its Location header or its body. With
// Policy.StatusPointer set, each accepted attempt's monitor is noted as
// the attempt is recorded (noteOperation), and while its intent's effects
// settle the monitor is read (GET) until it says the operation is over:
// the count is settled only then, and the observation records what each
// monitor said (idemcheck.Operation), so the checker can tell a pending
// operation from a lost effect, and one that failed from one that owes
// its effect.
//
// Like the effect read-back, a monitor is only ever sent GET, straight to
// the target's checked address, never through the fault proxy, and only
// on the target's own origin.

// operation is an accepted attempt's status monitor, as noted.
type operation struct {
	rec idemcheck.Operation
	// url is the monitor's absolute URL; nil when the reply named none
	// idemcheck may read (rec.Error says why).
	url    *url.URL
	header http.Header
}

// over reports whether the operation needs no more reads: it finished or
// failed, or it has no monitor to read.
func (o *operation) over() bool { return o.rec.Over != "" || o.url == nil }

// noteOperation notes the status monitor of a, an attempt answered with an
// accepted status (res its result), for the running round's intent.
func (s *session) noteOperation(a idemcheck.Attempt, res wire.Result, in idemcheck.Intent) {
	if s.Policy.StatusPointer == "" || s.soak {
		return
	}
	op := operation{rec: idemcheck.Operation{Attempt: a.ID}}
	u, err := s.monitorURL(res)
	if err != nil {
		op.rec.Error = err.Error()
	} else {
		op.url, op.rec.URL = u, s.scrub(u.RequestURI())
		op.header = s.monitorHeader(in, a.Variant)
	}
	s.opsMu.Lock()
	defer s.opsMu.Unlock()
	// A burst's copies and a retry's replay name the same monitor: it
	// is read once, under the first attempt that named it.
	if !slices.ContainsFunc(s.ops, func(o *operation) bool { return o.rec.URL == op.rec.URL && o.rec.Error == op.rec.Error }) {
		s.ops = append(s.ops, &op)
	}
}

// takeOperations returns the running round's noted operations and
// forgets them.
func (s *session) takeOperations() []*operation {
	s.opsMu.Lock()
	defer s.opsMu.Unlock()
	out := s.ops
	s.ops = nil
	return out
}

// monitorURL is the status monitor an accepted reply names: at the
// policy's StatusURLPointer in its body, else its Location (or
// Content-Location) header, resolved against the target's URL. Another
// origin than the target's is refused: idemcheck reads only the target.
func (s *session) monitorURL(res wire.Result) (*url.URL, error) {
	var ref string
	if p := s.Policy.StatusURLPointer; p != "" {
		v, err := valueAt(res.Body, p)
		if err != nil {
			return nil, fmt.Errorf("no status monitor: %v", err)
		}
		str, ok := v.(string)
		if !ok || str == "" {
			return nil, fmt.Errorf("no status monitor: %s is not a URL", p)
		}
		ref = str
	} else {
		ref = res.Header.Get("Location")
		if ref == "" {
			ref = res.Header.Get("Content-Location")
		}
		if ref == "" {
			return nil, errors.New("no status monitor: the accepted reply has no Location header")
		}
	}
	base := s.Endpoint.Base
	u, err := base.Parse(ref)
	if err != nil {
		return nil, fmt.Errorf("no status monitor: %q is not a URL: %v", s.scrub(ref), err)
	}
	if u.Scheme != base.Scheme || u.Host != base.Host {
		return nil, fmt.Errorf("the status monitor %s://%s is not on the target's origin (%s://%s): idemcheck reads only the target",
			u.Scheme, u.Host, base.Scheme, base.Host)
	}
	return u, nil
}

// monitorHeader is what a monitor is read with: the endpoint's headers
// (its credentials) for the intent, and the tenant's an attempt of
// another client sent, without the key and the body's Content-Type.
func (s *session) monitorHeader(in idemcheck.Intent, v idemcheck.Variant) http.Header {
	h := http.Header{}
	for _, hd := range s.Endpoint.Header {
		if strings.EqualFold(hd.Name, s.Policy.KeyHeader) || strings.EqualFold(hd.Name, "Content-Type") || hd.Value.Computed() {
			continue
		}
		h.Set(hd.Name, hd.Value.Fill(in))
	}
	if t := s.Endpoint.Tenants; len(t) == 2 {
		switch v {
		case idemcheck.TenantA:
			h.Set(t[0].Name, t[0].Value.Fill(in))
		case idemcheck.OtherTenant:
			h.Set(t[1].Name, t[1].Value.Fill(in))
		}
	}
	h.Set("Accept", "application/json")
	return h
}

// readOperation reads one operation's monitor once and records what it
// said; the read holds one of sem's places while it runs.
func (s *session) readOperation(ctx context.Context, op *operation, sem chan struct{}) error {
	select {
	case sem <- struct{}{}:
		defer func() { <-sem }()
	case <-ctx.Done():
		return ctx.Err()
	}
	op.rec.Polls++
	state, err := s.monitorState(ctx, op)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		op.rec.Error = s.scrub(err.Error())
		return nil
	}
	op.rec.State, op.rec.Error = state, ""
	switch {
	case slices.Contains(s.Policy.StatusDone, state):
		op.rec.Over = idemcheck.OperationDone
	case slices.Contains(s.Policy.StatusFailed, state):
		op.rec.Over = idemcheck.OperationFailed
	}
	return nil
}

// monitorState sends the monitor's GET and returns the state at the
// policy's StatusPointer, a string, number or boolean as text.
func (s *session) monitorState(ctx context.Context, op *operation) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, EffectTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, op.url.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header = op.header.Clone()
	resp, err := s.monitors().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxEffectBody+1))
	if err != nil {
		return "", err
	}
	if len(body) > MaxEffectBody {
		return "", fmt.Errorf("the status monitor's answer is larger than %d MB", MaxEffectBody>>20)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("the status monitor answered %d, not 2xx", resp.StatusCode)
	}
	v, err := valueAt(body, s.Policy.StatusPointer)
	if err != nil {
		return "", fmt.Errorf("the status monitor's %v", err)
	}
	switch t := v.(type) {
	case string:
		return t, nil
	case json.Number, bool:
		return fmt.Sprint(t), nil
	}
	return "", fmt.Errorf("the status monitor's %s is neither a string, a number nor a boolean", s.Policy.StatusPointer)
}

// monitors is the client that reads status monitors: the effect
// read-back's, to the target's checked address.
func (s *session) monitors() *http.Client {
	s.monitorOnce.Do(func() {
		h := &HTTPEffects{Base: s.Endpoint.Base, Upstream: s.upstream(), AllowRemote: s.AllowRemote, TLS: s.TLS}
		s.monitorClient = h.http()
	})
	return s.monitorClient
}

// operationsState is the session's state for status monitors.
type operationsState struct {
	opsMu sync.Mutex
	// ops are the running round's accepted attempts' operations.
	ops           []*operation
	monitorOnce   sync.Once
	monitorClient *http.Client
}
