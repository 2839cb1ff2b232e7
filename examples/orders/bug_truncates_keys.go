package orders

// TruncatesKeys: keys are stored cut to their first 64 characters, so two
// clients' long keys that share a prefix are one key, and the second
// client gets the first one's order.
//
// How it happens: the key column was made varchar(64) "because a UUID is
// 36", and the code cuts the key to fit rather than fail; or a cache key
// is built from a fixed-size prefix. Keys are the client's to choose, up
// to 255 characters at Stripe, and clients build long ones by joining
// their own ids ("tenant-42:cart-9f3c...:attempt-group-7"): those that
// differ only at the end collide. The second request then matches the
// first's fingerprint (same body: two customers ordering the same thing),
// and is answered with the first's saved reply: the second customer is
// told of an order that is not theirs and has no order of their own. The
// reference stores the whole key (up to 255 bytes, request.go).
//
// idemcheck's key-syntax check sends the same body under two valid keys of
// 200 characters that differ only in their last character, and reports
// over-deduplication when the second is answered with the first's order.

// TruncatesKeys stores keys cut to TruncatedKeyLen characters.
const TruncatesKeys Variant = "truncates-keys"

// TruncatedKeyLen is how much of a key the TruncatesKeys variant keeps.
const TruncatedKeyLen = 64

// truncatesKeys replaces the key a request is stored under.
func truncatesKeys(st *steps) {
	st.storedKey = func(key string) string {
		// THE BUG: the rest of the key is dropped.
		return key[:min(len(key), TruncatedKeyLen)]
	}
}
