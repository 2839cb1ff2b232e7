package mysqlwire

import "encoding/binary"

// command reads one command from the client.
func (s *Scanner) command(p *payload) {
	h := p.head
	s.ids++
	c := Command{ID: s.ids, Code: h[0], Reply: true, InTransaction: s.inTrans, lastSeq: p.last}
	exp := expSimple
	switch c.Code {
	case ComQuery:
		c.SQL = s.queryText(h[1:])
		c.Statements = Classify(c.SQL, s.noBackslash)
		exp = expResult
	case ComStmtPrepare:
		c.SQL = string(h[1:])
		c.Statements = Classify(c.SQL, s.noBackslash)
		if len(c.Statements) > 1 {
			c.Statements = c.Statements[:1] // a prepared statement is one statement
		}
		s.lastPrep = prepared{sql: c.SQL, stmts: c.Statements}
		exp = expPrepare
	case ComStmtExecute, ComStmtBulkExecute, ComStmtClose, ComStmtReset, ComStmtFetch, ComStmtSendLongData:
		if len(h) >= 5 {
			c.StmtID = binary.LittleEndian.Uint32(h[1:5])
		}
		ps, ok := s.stmts[c.StmtID]
		if c.StmtID == 0xffffffff {
			ps, ok = s.lastPrep, true // MariaDB: the statement prepared last
		}
		if ok {
			c.SQL = ps.sql // for the record: only an execution runs it
		}
		switch c.Code {
		case ComStmtExecute, ComStmtBulkExecute:
			c.Statements = ps.stmts
			exp = expResult
		case ComStmtClose:
			delete(s.stmts, c.StmtID)
			exp = expNone
		case ComStmtSendLongData:
			exp = expNone
		case ComStmtFetch:
			exp = expRows
		}
	case ComQuit:
		exp = expNone
	case ComProcessInfo:
		exp = expResult
	case ComFieldList:
		exp = expFieldList
	case ComChangeUser:
		exp = expAuth
	case ComBinlogDump, ComBinlogDumpGTID, ComTableDump:
		s.stop(s.rel(p.start), c.Name()+" starts a replication stream, which is not followed", false)
		return
	case ComMulti:
		s.stop(s.rel(p.start), "COM_MULTI is not followed", false)
		return
	}
	c.Reply = exp != expNone
	if c.Code != ComStmtPrepare {
		s.land(&c) // Statements are set only for the commands that run them, and a prepare
	}
	if c.Reply {
		s.pending = append(s.pending, &pending{cmd: c, exp: exp, next: p.last + 1})
	}
	s.evs = append(s.evs, Event{Kind: EventCommand, Start: s.rel(p.start), End: s.rel(p.end), Command: c})
}

// queryText is a COM_QUERY's text: with CLIENT_QUERY_ATTRIBUTES it
// follows the attributes (their count, names, types and values); where
// those cannot be read, the text is unknown ("").
func (s *Scanner) queryText(b []byte) string {
	if s.caps&ClientQueryAttributes == 0 {
		return string(b)
	}
	n, k, ok := lenenc(b) // parameter_count
	if !ok || n > 0xffff {
		return ""
	}
	_, k2, ok := lenenc(b[k:]) // parameter_set_count, always 1
	if !ok {
		return ""
	}
	i := k + k2
	if n == 0 {
		return string(b[i:])
	}
	count := int(n)
	nulls := b[min(i, len(b)):min(i+(count+7)/8, len(b))]
	i += (count + 7) / 8
	if i >= len(b) || b[i] != 1 { // new_params_bind_flag: the types follow
		return ""
	}
	i++
	types := make([]byte, count)
	for p := range count {
		if i+2 > len(b) {
			return ""
		}
		types[p] = b[i]
		i += 2
		l, k, ok := lenenc(b[i:]) // the attribute's name
		if !ok || l > uint64(len(b)) {
			return ""
		}
		i += k + int(l)
	}
	for p, typ := range types {
		if p/8 < len(nulls) && nulls[p/8]&(1<<(p%8)) != 0 {
			continue
		}
		size, ok := binaryValueSize(typ, b[min(i, len(b)):])
		if !ok {
			return ""
		}
		i += size
	}
	if i > len(b) {
		return ""
	}
	return string(b[i:])
}

// binaryValueSize is the length of a value of MySQL type typ in the
// binary protocol, read from b.
func binaryValueSize(typ byte, b []byte) (int, bool) {
	switch typ {
	case 0x06: // NULL
		return 0, true
	case 0x01: // TINY
		return 1, true
	case 0x02, 0x0d: // SHORT, YEAR
		return 2, true
	case 0x03, 0x04, 0x09: // LONG, FLOAT, INT24
		return 4, true
	case 0x05, 0x08: // DOUBLE, LONGLONG
		return 8, true
	case 0x07, 0x0a, 0x0b, 0x0c: // TIMESTAMP, DATE, TIME, DATETIME: a length, then that many bytes
		if len(b) == 0 {
			return 0, false
		}
		return 1 + int(b[0]), true
	}
	l, k, ok := lenenc(b) // strings, decimals, blobs, JSON, ...
	if !ok || l > uint64(len(b)) {
		return 0, false
	}
	return k + int(l), true
}

// land moves the predicted transaction state past c's statements and sets
// its Effect and Write, as faults/' step does for PostgreSQL.
func (s *Scanner) land(c *Command) {
	for _, st := range c.Statements {
		var eff Effect
		var w WriteKind
		switch st.Class {
		case Begin:
			if s.inTrans {
				eff = EffectCommit
			}
			s.inTrans = true
		case Commit:
			eff, w = EffectCommit, WriteCommit
			s.inTrans = st.Chain
		case Rollback:
			s.inTrans = st.Chain
		case Write:
			if s.autocommit && !s.inTrans {
				eff, w = EffectAutocommitWrite, WriteAutocommit
			} else {
				w = WriteInTransaction
				s.inTrans = true
			}
		case Read:
			if !s.autocommit {
				s.inTrans = true
			}
		case SetAutocommit:
			if st.Autocommit && !s.autocommit && s.inTrans {
				eff = EffectCommit
			}
			if st.Autocommit && !s.autocommit {
				s.inTrans = false
			}
			s.autocommit = st.Autocommit
		default:
			if st.ImplicitCommit && s.inTrans {
				eff = EffectCommit
				s.inTrans = false
			}
		}
		if c.Effect == NoEffect {
			c.Effect = eff
		}
		if c.Write == NoWrite {
			c.Write = w
		}
	}
}
