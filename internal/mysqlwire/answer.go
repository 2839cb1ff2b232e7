package mysqlwire

import (
	"encoding/binary"
	"fmt"
)

// expect is the shape of the answer a command gets.
type expect uint8

const (
	expNone      expect = iota // no answer
	expSimple                  // one packet: OK, ERR, EOF, or a string (COM_STATISTICS)
	expResult                  // OK, ERR, LOCAL INFILE request or result sets, then more results
	expPrepare                 // COM_STMT_PREPARE_OK and its column definitions, or ERR
	expRows                    // rows, then EOF or OK (COM_STMT_FETCH)
	expFieldList               // column definitions, then EOF (COM_FIELD_LIST)
	expAuth                    // an authentication exchange ending in OK or ERR (COM_CHANGE_USER)
)

// stage within an answer.
type stage uint8

const (
	stFirst  stage = iota // the first packet of a result: OK, ERR, 0xfb, or a column count
	stDefs                // column definitions (defs of them left)
	stDefEOF              // the EOF after the definitions (without CLIENT_DEPRECATE_EOF)
	stRows                // rows, up to EOF/OK or ERR
)

// pending is a command awaiting its answer, and how far the answer has
// come.
type pending struct {
	cmd Command
	exp expect
	// next is the sequence id the server's next packet must carry.
	next    byte
	started bool
	start   int64 // stream offset of the answer's first byte
	st      stage
	defs    int   // column definitions left
	groups  []int // COM_STMT_PREPARE_OK: the column counts still to come
	ans     Answer
}

// serverPayload follows one payload from the server.
func (s *Scanner) serverPayload(p *payload) {
	switch s.phase {
	case phaseGreeting:
		s.greeting(p)
		return
	case phaseAuth:
		s.authPacket(p)
		return
	case phaseClosed:
		return
	}
	h := p.head
	if len(s.pending) == 0 {
		if len(h) > 0 && h[0] == 0xff {
			// Sent unasked (an idle connection timed out, the server
			// shuts down): the connection ends.
			s.evs = append(s.evs, Event{Kind: EventAnswer, Start: s.rel(p.start), End: s.rel(p.end), Answer: s.errAnswer(h)})
			return
		}
		s.stop(s.rel(p.start), "the server sent a packet that no command asked for", false)
		return
	}
	a := s.pending[0]
	if p.seq != a.next {
		s.stop(s.rel(p.start), fmt.Sprintf("the server's packet %d answers %s out of sequence (expected %d)", p.seq, a.cmd.Name(), a.next), false)
		return
	}
	a.next = p.last + 1
	if !a.started {
		a.started, a.start = true, p.start
	}
	if len(h) >= 3 && h[0] == 0xff && s.ext&MariaDBProgress != 0 && binary.LittleEndian.Uint16(h[1:3]) == 0xffff {
		return // a MariaDB progress report, not an error
	}
	done, err := s.answerPacket(a, p)
	if err != "" {
		s.stop(s.rel(p.start), err, false)
		return
	}
	if done {
		s.answered(a, p)
	}
}

// answered ends the oldest pending command's answer.
func (s *Scanner) answered(a *pending, p *payload) {
	s.pending = s.pending[1:]
	ans := a.ans
	if ans.HasStatus && len(s.pending) == 0 {
		// The server's word on the transaction state.
		s.inTrans = ans.Status&StatusInTrans != 0
		s.autocommit = ans.Status&StatusAutocommit != 0
		s.noBackslash = ans.Status&StatusNoBackslashEscape != 0
	}
	if ans.OK {
		switch a.cmd.Code {
		case ComStmtPrepare:
			s.stmts[ans.StmtID] = prepared{sql: a.cmd.SQL, stmts: a.cmd.Statements}
		case ComChangeUser, ComResetConnection:
			clear(s.stmts)
		}
	}
	s.evs = append(s.evs, Event{Kind: EventAnswer, Start: s.rel(a.start), End: s.rel(p.end), Command: a.cmd, Answer: ans})
}

// answerPacket reads one packet of a's answer and reports whether the
// answer is complete, or why the stream cannot be followed.
func (s *Scanner) answerPacket(a *pending, p *payload) (done bool, bad string) {
	h := p.head
	if p.size == 0 {
		if a.exp == expSimple {
			a.ans.OK = true
			return true, ""
		}
		return false, "the server sent an empty packet in an answer to " + a.cmd.Name()
	}
	switch a.exp {
	case expSimple:
		switch h[0] {
		case 0x00:
			a.ans = s.okAnswer(h)
		case 0xff:
			a.ans = s.errAnswer(h)
		case 0xfe:
			a.ans = eofAnswer(h)
		default:
			a.ans.OK = true // COM_STATISTICS: a string
		}
		return true, ""
	case expAuth:
		switch h[0] {
		case 0x00:
			a.ans = s.okAnswer(h)
			return true, ""
		case 0xff:
			a.ans = s.errAnswer(h)
			return true, ""
		}
		return false, "" // an authentication switch or more data
	case expPrepare:
		return s.preparePacket(a, p)
	case expFieldList:
		if h[0] == 0xff {
			a.ans = s.errAnswer(h)
			return true, ""
		}
		if h[0] == 0xfe && p.size < 9 {
			a.ans = eofAnswer(h)
			return true, ""
		}
		return false, ""
	case expRows:
		a.st = stRows
	}
	return s.resultPacket(a, p)
}

// resultPacket reads one packet of a result (a COM_QUERY's, a
// COM_STMT_EXECUTE's, or the rows a COM_STMT_FETCH gets).
func (s *Scanner) resultPacket(a *pending, p *payload) (done bool, bad string) {
	h := p.head
	switch a.st {
	case stFirst:
		switch h[0] {
		case 0x00:
			a.ans = s.moreOK(a, s.okAnswer(h))
			return a.ans.Status&StatusMoreResultsExists == 0, ""
		case 0xff:
			a.ans = s.errAnswer(h)
			return true, ""
		case 0xfb:
			// LOCAL INFILE request: the client sends the file, then the
			// server answers with OK or ERR.
			s.infile = true
			return false, ""
		}
		n, k, ok := lenenc(h)
		if !ok || n == 0 || n > 0xffff {
			return false, fmt.Sprintf("the server's answer to %s has no valid column count", a.cmd.Name())
		}
		a.defs = int(n)
		if s.ext&MariaDBCacheMetadata != 0 || s.caps&ClientOptionalResultsetMetadata != 0 {
			if len(h) > k && h[k] == 0 {
				a.defs = 0 // metadata skipped
			}
		}
		a.st = stDefs
		if a.defs == 0 {
			a.st = s.afterDefs()
		}
		return false, ""
	case stDefs:
		a.defs--
		if a.defs == 0 {
			a.st = s.afterDefs()
		}
		return false, ""
	case stDefEOF:
		if h[0] == 0xff {
			a.ans = s.errAnswer(h)
			return true, ""
		}
		a.st = stRows
		if e := eofAnswer(h); e.Status&StatusCursorExists != 0 {
			// A cursor was opened: the rows come with COM_STMT_FETCH.
			a.ans = s.moreOK(a, e)
			return a.ans.Status&StatusMoreResultsExists == 0, ""
		}
		return false, ""
	}
	// stRows
	switch {
	case h[0] == 0xff:
		a.ans = s.errAnswer(h)
		return true, ""
	case h[0] == 0xfe && p.size < maxPacket:
		var e Answer
		if s.caps&ClientDeprecateEOF != 0 {
			e = s.okAnswer(h)
		} else {
			e = eofAnswer(h)
		}
		a.ans = s.moreOK(a, e)
		a.st = stFirst
		return a.ans.Status&StatusMoreResultsExists == 0, ""
	}
	a.ans.Rows++
	return false, ""
}

// moreOK records the end of one result of a's answer.
func (s *Scanner) moreOK(a *pending, e Answer) Answer {
	e.Results = a.ans.Results + 1
	e.Rows = a.ans.Rows
	a.st = stFirst
	return e
}

// afterDefs is the stage after a result's column definitions.
func (s *Scanner) afterDefs() stage {
	if s.caps&ClientDeprecateEOF != 0 {
		return stRows
	}
	return stDefEOF
}

// preparePacket reads one packet of the answer to a COM_STMT_PREPARE:
// COM_STMT_PREPARE_OK, the parameters' definitions and the columns'
// (each followed by an EOF without CLIENT_DEPRECATE_EOF).
func (s *Scanner) preparePacket(a *pending, p *payload) (done bool, bad string) {
	h := p.head
	if a.groups == nil && a.st == stFirst {
		switch {
		case h[0] == 0xff:
			a.ans = s.errAnswer(h)
			return true, ""
		case h[0] != 0x00 || p.size < 12:
			return false, "the server's answer to COM_STMT_PREPARE is neither COM_STMT_PREPARE_OK nor ERR"
		}
		a.ans = Answer{OK: true, StmtID: binary.LittleEndian.Uint32(h[1:5])}
		cols := int(binary.LittleEndian.Uint16(h[5:7]))
		params := int(binary.LittleEndian.Uint16(h[7:9]))
		if s.caps&ClientOptionalResultsetMetadata != 0 && p.size > 12 && h[12] == 0 {
			cols, params = 0, 0 // metadata skipped
		}
		a.groups = []int{params, cols}
		return s.nextGroup(a), ""
	}
	switch a.st {
	case stDefs:
		a.defs--
		if a.defs == 0 {
			if s.caps&ClientDeprecateEOF == 0 {
				a.st = stDefEOF
				return false, ""
			}
			return s.nextGroup(a), ""
		}
		return false, ""
	case stDefEOF:
		return s.nextGroup(a), ""
	}
	return false, "the server's answer to COM_STMT_PREPARE runs past its definitions"
}

// nextGroup moves a prepare's answer on to its next non-empty group of
// definitions, and reports whether none is left.
func (s *Scanner) nextGroup(a *pending) bool {
	for len(a.groups) > 0 {
		n := a.groups[0]
		a.groups = a.groups[1:]
		if n > 0 {
			a.defs, a.st = n, stDefs
			return false
		}
	}
	return true
}

// okAnswer reads an OK packet (header 0x00, or 0xfe ending a result set
// with CLIENT_DEPRECATE_EOF).
func (s *Scanner) okAnswer(h []byte) Answer {
	a := Answer{OK: true}
	_, n, ok := lenenc(h[1:]) // affected rows
	if !ok {
		return a
	}
	_, m, ok := lenenc(h[1+n:]) // last insert id
	if !ok || len(h) < 1+n+m+2 {
		return a
	}
	a.Status, a.HasStatus = binary.LittleEndian.Uint16(h[1+n+m:]), true
	return a
}

// eofAnswer reads an EOF packet: 0xfe, warnings, status.
func eofAnswer(h []byte) Answer {
	a := Answer{OK: true}
	if len(h) >= 5 {
		a.Status, a.HasStatus = binary.LittleEndian.Uint16(h[3:5]), true
	}
	return a
}

// errAnswer reads an ERR packet: 0xff, code, '#' and SQL state, message.
func (s *Scanner) errAnswer(h []byte) Answer {
	a := Answer{}
	if len(h) >= 3 {
		a.ErrCode = binary.LittleEndian.Uint16(h[1:3])
	}
	msg := h[min(3, len(h)):]
	if len(msg) >= 6 && msg[0] == '#' {
		a.SQLState = string(msg[1:6])
		msg = msg[6:]
	}
	a.Message = string(msg)
	return a
}

// greeting reads the server's first packet: its Initial Handshake Packet
// (protocol 10), or an ERR if it refuses the connection.
func (s *Scanner) greeting(p *payload) {
	h := p.head
	if len(h) > 0 && h[0] == 0xff {
		s.phase = phaseClosed
		s.evs = append(s.evs, Event{Kind: EventConnected, Start: s.rel(p.start), End: s.rel(p.end), Answer: s.errAnswer(h)})
		return
	}
	if len(h) == 0 || h[0] != 10 || p.seq != 0 {
		s.stop(s.rel(p.start), "the server's first packet is not a MySQL protocol 10 greeting", false)
		return
	}
	i := 1
	for i < len(h) && h[i] != 0 {
		i++ // server version
	}
	i += 1 + 4 + 8 + 1 // NUL, thread id, auth data part 1, filler
	if len(h) < i+2 {
		s.stop(s.rel(p.start), "the server's greeting is too short", false)
		return
	}
	s.serverCaps = uint32(binary.LittleEndian.Uint16(h[i:]))
	i += 2
	if len(h) >= i+5 {
		status := binary.LittleEndian.Uint16(h[i+1:])
		s.autocommit = status&StatusAutocommit != 0
		s.serverCaps |= uint32(binary.LittleEndian.Uint16(h[i+3:])) << 16
		i += 5
	}
	s.mariadb = s.serverCaps&ClientMySQL == 0
	if s.mariadb && len(h) >= i+11 {
		// Auth data length, 6 filler bytes, then MariaDB's capabilities.
		s.serverExt = binary.LittleEndian.Uint32(h[i+7:])
	}
	s.phase = phaseAuth
}

// authPacket reads a server packet of the authentication exchange: an
// authentication switch or more data passes; OK or ERR ends it.
func (s *Scanner) authPacket(p *payload) {
	h := p.head
	if len(h) == 0 || (h[0] != 0x00 && h[0] != 0xff) {
		return
	}
	ev := Event{Kind: EventConnected, Start: s.rel(p.start), End: s.rel(p.end)}
	if h[0] == 0xff {
		ev.Answer = s.errAnswer(h)
		s.phase = phaseClosed
		s.evs = append(s.evs, ev)
		return
	}
	ev.Answer = s.okAnswer(h)
	if ev.Answer.HasStatus {
		s.inTrans = ev.Answer.Status&StatusInTrans != 0
		s.autocommit = ev.Answer.Status&StatusAutocommit != 0
		s.noBackslash = ev.Answer.Status&StatusNoBackslashEscape != 0
	}
	s.phase = phaseCommand
	s.evs = append(s.evs, ev)
	if s.caps&(ClientCompress|ClientZstdCompression) != 0 {
		s.stop(ev.End, "the connection uses the compressed protocol, which is not followed", false)
	}
}
