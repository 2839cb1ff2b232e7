package scenarios

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemcheck/idemcheck"
)

// MutateBody returns a body that asks for something else than body while
// keeping its shape, so a strict server still parses it: the first number
// is increased by one, else the first string that is not the intent's id
// or key gets a suffix, else a member is added. Members are visited in the
// order they are written, so the change is the same on every run.
func MutateBody(body string, in idemcheck.Intent) string {
	doc, ok := parseOrdered(body)
	if !ok {
		return body + " "
	}
	if mutate(&doc, in, true) || mutate(&doc, in, false) {
		return doc.String()
	}
	if doc.kind == '{' {
		doc.members = append(doc.members, member{key: "idemcheckChanged", value: node{kind: 'l', lit: "true"}})
		return doc.String()
	}
	return body + " "
}

// mutate changes the first number (numbers=true) or the first string that
// is not one of the intent's own values.
func mutate(n *node, in idemcheck.Intent, numbers bool) bool {
	switch n.kind {
	case '{':
		for i := range n.members {
			if mutate(&n.members[i].value, in, numbers) {
				return true
			}
		}
	case '[':
		for i := range n.items {
			if mutate(&n.items[i], in, numbers) {
				return true
			}
		}
	case 'n':
		if numbers {
			if i, err := strconv.ParseInt(n.lit, 10, 64); err == nil {
				n.lit = strconv.FormatInt(i+1, 10)
			} else {
				n.lit = n.lit + "1"
			}
			return true
		}
	case 's':
		if !numbers {
			var v string
			if json.Unmarshal([]byte(n.lit), &v) == nil && v != in.ID && v != in.Key && !strings.Contains(v, in.ID) {
				b, _ := json.Marshal(v + "-changed")
				n.lit = string(b)
				return true
			}
		}
	}
	return false
}

// ReorderBody returns the same JSON value with every object's members in
// reverse order and other white space: the same request to any server
// that compares meaning, different bytes to one that compares bytes.
func ReorderBody(body string) string {
	doc, ok := parseOrdered(body)
	if !ok {
		return body
	}
	reverse(&doc)
	var b bytes.Buffer
	doc.write(&b, "\n", "  ")
	return b.String()
}

func reverse(n *node) {
	for i, j := 0, len(n.members)-1; i < j; i, j = i+1, j-1 {
		n.members[i], n.members[j] = n.members[j], n.members[i]
	}
	for i := range n.members {
		reverse(&n.members[i].value)
	}
	for i := range n.items {
		reverse(&n.items[i])
	}
}

// node is a JSON value that keeps its members in written order, which
// encoding/json's maps do not.
type node struct {
	kind    byte // '{', '[', 's' string, 'n' number, 'l' literal (true, false, null)
	lit     string
	members []member
	items   []node
}

type member struct {
	key   string
	value node
}

func parseOrdered(s string) (node, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	n, err := parseNode(dec)
	if err != nil || dec.More() {
		return node{}, false
	}
	if _, err := dec.Token(); err == nil {
		return node{}, false // trailing data
	}
	return n, true
}

func parseNode(dec *json.Decoder) (node, error) {
	tok, err := dec.Token()
	if err != nil {
		return node{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := node{kind: '{'}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return node{}, err
				}
				v, err := parseNode(dec)
				if err != nil {
					return node{}, err
				}
				n.members = append(n.members, member{key: kt.(string), value: v})
			}
			_, err := dec.Token()
			return n, err
		case '[':
			n := node{kind: '['}
			for dec.More() {
				v, err := parseNode(dec)
				if err != nil {
					return node{}, err
				}
				n.items = append(n.items, v)
			}
			_, err := dec.Token()
			return n, err
		}
	case string:
		b, _ := json.Marshal(t)
		return node{kind: 's', lit: string(b)}, nil
	case json.Number:
		return node{kind: 'n', lit: t.String()}, nil
	case bool:
		if t {
			return node{kind: 'l', lit: "true"}, nil
		}
		return node{kind: 'l', lit: "false"}, nil
	case nil:
		return node{kind: 'l', lit: "null"}, nil
	}
	return node{}, fmt.Errorf("unexpected JSON token %v", tok)
}

// String writes the node compactly, in its member order.
func (n node) String() string {
	var b bytes.Buffer
	n.write(&b, "", "")
	return b.String()
}

func (n node) write(b *bytes.Buffer, nl, ind string) {
	switch n.kind {
	case '{':
		b.WriteString("{" + nl)
		for i, m := range n.members {
			kb, _ := json.Marshal(m.key)
			b.WriteString(ind)
			b.Write(kb)
			if nl != "" {
				b.WriteString(" : ")
			} else {
				b.WriteString(":")
			}
			m.value.write(b, nl, ind)
			if i < len(n.members)-1 {
				b.WriteString(",")
			}
			b.WriteString(nl)
		}
		b.WriteString("}")
	case '[':
		b.WriteString("[")
		for i, it := range n.items {
			if i > 0 {
				b.WriteString(", ")
			}
			it.write(b, nl, ind)
		}
		b.WriteString("]")
	default:
		b.WriteString(n.lit)
	}
}

// decodeJSON decodes a JSON document keeping numbers as written.
func decodeJSON(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil || dec.More() {
		return nil, false
	}
	return v, true
}

// RemoveMember returns body without the member at the JSON pointer (one
// level deep or more), keeping the other members in their order; a body
// without it is returned unchanged.
func RemoveMember(body, pointer string) string {
	doc, ok := parseOrdered(body)
	if !ok {
		return body
	}
	tokens := strings.Split(strings.TrimPrefix(pointer, "/"), "/")
	n := &doc
	for i, t := range tokens {
		t = strings.ReplaceAll(strings.ReplaceAll(t, "~1", "/"), "~0", "~")
		if n.kind != '{' {
			return body
		}
		found := false
		for j := range n.members {
			if n.members[j].key != t {
				continue
			}
			if i == len(tokens)-1 {
				n.members = append(n.members[:j], n.members[j+1:]...)
				return doc.String()
			}
			n, found = &n.members[j].value, true
			break
		}
		if !found {
			return body
		}
	}
	return body
}

// BreakTypes returns body, a JSON object, with the value of every top-level
// member replaced by one of another type (a string by a number, a number,
// literal, object or array by a string), members kept in their order: a
// request any typed validation refuses before doing any work. ok is false
// when body is not a JSON object with members.
func BreakTypes(body string) (string, bool) {
	doc, ok := parseOrdered(body)
	if !ok || doc.kind != '{' || len(doc.members) == 0 {
		return "", false
	}
	for i := range doc.members {
		v := &doc.members[i].value
		switch v.kind {
		case 's':
			*v = node{kind: 'n', lit: "-1"}
		case 'n':
			*v = node{kind: 's', lit: `"not-a-number"`}
		case 'l':
			*v = node{kind: 's', lit: `"not-a-literal"`}
		default:
			*v = node{kind: 's', lit: `"not-a-structure"`}
		}
	}
	return doc.String(), true
}

// OverlongKey returns a key one character longer than idemcheck.MaxKeyLen,
// starting with key.
func OverlongKey(key string) string { return padKey(key, idemcheck.MaxKeyLen+1) }

// ListKey returns key followed by a comma and a second key: a header value
// a reader of lists sees as two keys.
func ListKey(key string) string { return key + "," + key + "-2" }

// LongKey returns a valid key of idemcheck.LongKeyLen characters that starts
// with key and ends with last. Two such keys with another last character
// differ only in their last character.
func LongKey(key string, last byte) string { return padKey(key, idemcheck.LongKeyLen-1) + string(last) }

// padKey fills key up to n characters with a dash and repeated digits.
func padKey(key string, n int) string {
	var b strings.Builder
	b.WriteString(key)
	if b.Len() < n {
		b.WriteByte('-')
	}
	for i := 0; b.Len() < n; i++ {
		b.WriteByte('0' + byte(i%10))
	}
	return b.String()[:n]
}

// Fingerprint hashes method, path and the canonical JSON body (member order
// and white space do not count), as a server's request fingerprint should.
// It is what an attempt's Fingerprint in a history holds, so a reader can
// tell which recorded attempts sent the same request.
func Fingerprint(method, path string, body []byte) string {
	if v, ok := decodeJSON(body); ok {
		if b, err := json.Marshal(v); err == nil {
			body = b
		}
	}
	sum := sha256.Sum256([]byte(method + " " + path + "\n" + string(body)))
	return hex.EncodeToString(sum[:8])
}
