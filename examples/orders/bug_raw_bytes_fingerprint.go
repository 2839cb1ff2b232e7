package orders

// RawBytesFingerprint: the fingerprint hashes the body's bytes, so the same
// JSON written differently is judged a different request.
//
// How it happens: hashing the raw body is the obvious one-liner
// (sha256(body)), and it works while every retry resends the very same
// bytes. But a client that rebuilds its request on retry (a new process
// after a crash, another JSON library, a map serialised in another order,
// a pretty-printing proxy) sends the same request in other bytes, and its
// legitimate retry is refused with 422: the client cannot learn whether
// its first attempt succeeded, which is the one thing the key was for.
//
// The method and path stay in the fingerprint, as in the reference; only
// the body's canonical form is replaced by its raw bytes. idemcheck's
// reordered-body check sends an intent, then the same JSON with its
// members reordered and its white space changed, and reports
// false-mismatch: the same request was judged a mismatch.

// RawBytesFingerprint compares bodies byte for byte instead of by meaning.
const RawBytesFingerprint Variant = "raw-bytes-fingerprint"

// rawBytesFingerprint replaces the fingerprint.
func rawBytesFingerprint(st *steps) { st.fingerprint = rawFingerprint }

// rawFingerprint is the bug: the bytes, not the JSON they encode.
func rawFingerprint(method, path string, raw []byte, _ map[string]any) []byte {
	return digest([]byte(method), []byte(path), raw)
}
