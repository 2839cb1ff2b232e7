package mysqlwire

import "fmt"

// maxPacket is the payload length of a packet that another one continues:
// a payload of 0xffffff bytes or more is sent as packets of 0xffffff
// bytes, the last one shorter (empty if need be).
const maxPacket = 0xffffff

// reuseHead bounds the buffer a framer keeps from one payload to the next.
const reuseHead = 64 << 10

// payload is one logical payload: the packets of one message, joined.
type payload struct {
	// start and end are the stream offsets of its first header byte and
	// just past its last byte.
	start, end int64
	// seq is the sequence id of its first packet, last that of its last.
	seq, last byte
	// size is the payload's whole length; head its first bytes (up to the
	// framer's keep), which is all the scanner ever reads of it.
	size int
	head []byte
}

// framer cuts one direction of a connection into logical payloads, across
// whatever chunks the relay's reads gave. It keeps a bounded prefix of each
// payload, so a large row or blob costs no memory.
type framer struct {
	keep int   // how many leading payload bytes to keep
	pos  int64 // stream offset of the next byte

	hdr  [4]byte
	nhdr int
	left int  // bytes of the current packet's payload still to read
	body bool // reading a packet's payload (its header is complete)
	more bool // the current packet is maxPacket long: another continues the payload
	open bool // a payload has begun
	cur  payload
	// check, when set, vets the header of each payload's first packet, so
	// that what is not the protocol is told before its length is awaited.
	check func(seq byte, n int) error
}

// next reads b[i:] until a logical payload is complete, and returns where
// it stopped and the payload if one is complete. A continuation packet out
// of sequence is an error: the stream is not the protocol.
func (f *framer) next(b []byte, i int) (int, *payload, error) {
	for i < len(b) {
		if !f.body {
			k := min(4-f.nhdr, len(b)-i)
			if !f.open && f.nhdr == 0 {
				head := f.cur.head[:0]
				if cap(head) > reuseHead {
					head = nil // a big query's buffer is not kept for the connection's life
				}
				f.cur = payload{start: f.pos, head: head}
			}
			copy(f.hdr[f.nhdr:], b[i:i+k])
			f.nhdr += k
			i += k
			f.pos += int64(k)
			if f.nhdr < 4 {
				return i, nil, nil
			}
			f.nhdr = 0
			n := int(f.hdr[0]) | int(f.hdr[1])<<8 | int(f.hdr[2])<<16
			seq := f.hdr[3]
			if f.open {
				if seq != f.cur.last+1 {
					return i, nil, fmt.Errorf("packet %d continues a payload after packet %d", seq, f.cur.last)
				}
			} else {
				if f.check != nil {
					if err := f.check(seq, n); err != nil {
						return i, nil, err
					}
				}
				f.cur.seq = seq
				f.open = true
			}
			f.cur.last = seq
			f.left, f.body, f.more = n, true, n == maxPacket
		}
		k := min(f.left, len(b)-i)
		if room := f.keep - len(f.cur.head); room > 0 {
			f.cur.head = append(f.cur.head, b[i:i+min(k, room)]...)
		}
		f.cur.size += k
		f.left -= k
		i += k
		f.pos += int64(k)
		if f.left > 0 {
			return i, nil, nil
		}
		f.body = false
		if f.more {
			continue
		}
		f.open = false
		f.cur.end = f.pos
		p := f.cur
		return i, &p, nil
	}
	return i, nil, nil
}

// partial is how many bytes read so far belong to a payload not yet
// complete.
func (f *framer) partial() int {
	if !f.open && f.nhdr == 0 && !f.body {
		return 0
	}
	return int(f.pos - f.cur.start)
}
