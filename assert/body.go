package assert

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// canonicalBody returns a JSON body re-encoded with sorted members and the
// ignored pointers removed, so two replies compare equal when they say the
// same thing. A body that is not JSON is returned as it is.
func canonicalBody(body string, ignore []string) string {
	v, ok := decode(body)
	if !ok {
		return body
	}
	for _, p := range ignore {
		v = removePointer(v, splitPointer(p))
	}
	b, err := json.Marshal(v) // encoding/json sorts map keys
	if err != nil {
		return body
	}
	return string(b)
}

func decode(body string) (any, bool) {
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if dec.More() {
		return nil, false
	}
	return v, true
}

// resourceID reads the created resource's id from a success body. With a
// pointer from the policy it reads that; otherwise it takes "id", or else the
// first top-level member named like an id ("orderId", "order_id") whose value
// the request did not send: a value echoed from the request (customerId)
// names the caller's data, not what the server created. It returns the id
// and the pointer it came from, or "", "" when none is found.
func resourceID(respBody, reqBody, pointer string) (string, string) {
	v, ok := decode(respBody)
	if !ok {
		return "", ""
	}
	if pointer != "" {
		if x, ok := lookup(v, splitPointer(pointer)); ok {
			return scalar(x), pointer
		}
		return "", ""
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return "", ""
	}
	sent := map[string]bool{}
	if rv, ok := decode(reqBody); ok {
		collectScalars(rv, sent)
	}
	var names []string
	for k, x := range obj {
		if !isIDName(k) || !isScalar(x) || sent[scalar(x)] {
			continue
		}
		names = append(names, k)
	}
	if len(names) == 0 {
		return "", ""
	}
	sort.Slice(names, func(i, j int) bool {
		// "id" itself first, then alphabetical for a stable choice.
		if (names[i] == "id") != (names[j] == "id") {
			return names[i] == "id"
		}
		return names[i] < names[j]
	})
	return scalar(obj[names[0]]), "/" + escapeToken(names[0])
}

func isIDName(k string) bool {
	return strings.EqualFold(k, "id") || strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "ID") || strings.HasSuffix(strings.ToLower(k), "_id")
}

func isScalar(x any) bool {
	switch x.(type) {
	case string, json.Number:
		return true
	}
	return false
}

func scalar(x any) string {
	switch t := x.(type) {
	case string:
		return t
	case json.Number:
		return t.String()
	case nil:
		return "null"
	}
	b, _ := json.Marshal(x)
	return string(b)
}

func collectScalars(v any, into map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		for _, x := range t {
			collectScalars(x, into)
		}
	case []any:
		for _, x := range t {
			collectScalars(x, into)
		}
	case string, json.Number:
		into[scalar(t)] = true
	}
}

// splitPointer splits an RFC 6901 JSON pointer into unescaped tokens.
func splitPointer(p string) []string {
	if p == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return parts
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func lookup(v any, tokens []string) (any, bool) {
	for _, t := range tokens {
		switch c := v.(type) {
		case map[string]any:
			x, ok := c[t]
			if !ok {
				return nil, false
			}
			v = x
		case []any:
			i, err := strconv.Atoi(t)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}
			v = c[i]
		default:
			return nil, false
		}
	}
	return v, true
}

func removePointer(v any, tokens []string) any {
	if len(tokens) == 0 {
		return v
	}
	switch c := v.(type) {
	case map[string]any:
		if len(tokens) == 1 {
			delete(c, tokens[0])
			return c
		}
		if x, ok := c[tokens[0]]; ok {
			c[tokens[0]] = removePointer(x, tokens[1:])
		}
	case []any:
		i, err := strconv.Atoi(tokens[0])
		if err != nil || i < 0 || i >= len(c) {
			return c
		}
		if len(tokens) == 1 {
			return append(c[:i:i], c[i+1:]...)
		}
		c[i] = removePointer(c[i], tokens[1:])
	}
	return v
}

// ValidatePointer says whether p is a well-formed JSON pointer (RFC 6901).
func ValidatePointer(p string) error {
	if p != "" && !strings.HasPrefix(p, "/") {
		return fmt.Errorf("JSON pointer %q must start with /", p)
	}
	if strings.Contains(strings.ReplaceAll(strings.ReplaceAll(p, "~0", ""), "~1", ""), "~") {
		return fmt.Errorf("JSON pointer %q has a ~ not followed by 0 or 1", p)
	}
	return nil
}
