package runner

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/idemcheck/idemcheck"
	"github.com/idemcheck/idemcheck/internal/netguard"
	"github.com/idemcheck/idemcheck/scenarios"
)

// HTTPEffects counts one intent's effects through the API itself, for a
// target whose database idemcheck cannot read (a third party's, staging's):
// a GET of Path, with the intent filled in, whose JSON answer holds at
// Count an array (its length is the count) or a number (the count).
//
// It only ever sends GET, so it changes nothing; it goes to the address
// the target's URL was checked and pinned to (Upstream), straight, never
// through the fault proxy, so no fault of the run touches it.
type HTTPEffects struct {
	// Base is the target's scheme and authority; Upstream the IP:port
	// every connection goes to.
	Base     *url.URL
	Upstream string
	// Path is the request path and query, a template ("/orders?customerId={{intent}}").
	Path idemcheck.Template
	// Count is the JSON pointer of the array or number; "" is the whole answer.
	Count string
	// Header is sent with every read-back: the endpoint's headers (its
	// credentials), without the key header and the body's Content-Type.
	Header []scenarios.Header
	// AllowRemote lets the connection leave loopback, as for the target.
	AllowRemote bool
	// Timeout bounds one read-back; zero means EffectTimeout.
	Timeout time.Duration
	// TLS is the client's TLS configuration for an https:// target, the
	// one the run's attempts use (see Runner.TLS).
	TLS *tls.Config

	once   sync.Once
	client *http.Client
}

// MaxEffectBody bounds a read-back's answer: a list filtered by one
// intent is small.
const MaxEffectBody = 4 << 20

func (h *HTTPEffects) http() *http.Client {
	h.once.Do(func() {
		d := netguard.Dialer(h.AllowRemote, 3*time.Second)
		t := &http.Transport{
			Proxy: nil,
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return d.DialContext(ctx, network, h.Upstream)
			},
			MaxIdleConnsPerHost: 2,
		}
		if h.Base.Scheme == "https" {
			t.TLSClientConfig = ClientTLS(h.TLS, h.Base)
		}
		h.client = &http.Client{
			Transport: t,
			// A redirect might lead off the checked address: not followed.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
	return h.client
}

// Describe is the read-back as the report shows it: "GET /path (count at /data)".
func (h *HTTPEffects) Describe() string {
	return fmt.Sprintf("GET %s (count at %s)", h.Path.Fill(idemcheck.Intent{ID: "{{intent}}", Key: "{{key}}", Seq: 0}), pointerName(h.Count))
}

func pointerName(p string) string {
	if p == "" {
		return `"" (the whole answer)`
	}
	return p
}

// count sends the read-back for one intent and returns the count and the
// path it asked.
func (h *HTTPEffects) count(ctx context.Context, in idemcheck.Intent) (int64, string, error) {
	timeout := h.Timeout
	if timeout <= 0 {
		timeout = EffectTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	path := h.Path.Fill(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, h.Base.Scheme+"://"+h.Base.Host+path, nil)
	if err != nil {
		return 0, path, err
	}
	for _, hd := range h.Header {
		req.Header.Set(hd.Name, hd.Value.Fill(in))
	}
	req.Header.Set("Accept", "application/json")
	resp, err := h.http().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, path, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxEffectBody+1))
	if err != nil {
		return 0, path, err
	}
	if len(body) > MaxEffectBody {
		return 0, path, fmt.Errorf("the answer is larger than %d MB", MaxEffectBody>>20)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return 0, path, fmt.Errorf("answered %d, not 2xx", resp.StatusCode)
	}
	n, err := CountAt(body, h.Count)
	return n, path, err
}

// CountAt reads a count from a JSON answer: at ptr, the length of an array
// or a whole non-negative number.
func CountAt(body []byte, ptr string) (int64, error) {
	v, err := valueAt(body, ptr)
	if err != nil {
		return 0, err
	}
	switch t := v.(type) {
	case []any:
		return int64(len(t)), nil
	case json.Number:
		n, err := strconv.ParseInt(t.String(), 10, 64)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%s is %s, not a count", pointerName(ptr), t)
		}
		return n, nil
	}
	return 0, fmt.Errorf("%s is neither an array nor a number", pointerName(ptr))
}

// valueAt is the value at ptr (RFC 6901) of a JSON answer, numbers as
// json.Number.
func valueAt(body []byte, ptr string) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("the answer is not JSON: %v", err)
	}
	if ptr == "" {
		return v, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("the answer has nothing at %s", ptr)
			}
			v = x
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("the answer has nothing at %s", ptr)
			}
			v = c[i]
		default:
			return nil, fmt.Errorf("the answer has nothing at %s", ptr)
		}
	}
	return v, nil
}
