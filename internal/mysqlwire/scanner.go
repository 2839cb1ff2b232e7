package mysqlwire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Command bytes (the MySQL docs' COM_* names).
const (
	ComQuit             byte = 0x01
	ComInitDB           byte = 0x02
	ComQuery            byte = 0x03
	ComFieldList        byte = 0x04
	ComStatistics       byte = 0x09
	ComProcessInfo      byte = 0x0a
	ComPing             byte = 0x0e
	ComChangeUser       byte = 0x11
	ComBinlogDump       byte = 0x12
	ComTableDump        byte = 0x13
	ComStmtPrepare      byte = 0x16
	ComStmtExecute      byte = 0x17
	ComStmtSendLongData byte = 0x18
	ComStmtClose        byte = 0x19
	ComStmtReset        byte = 0x1a
	ComSetOption        byte = 0x1b
	ComStmtFetch        byte = 0x1c
	ComBinlogDumpGTID   byte = 0x1e
	ComResetConnection  byte = 0x1f
	ComStmtBulkExecute  byte = 0xfa // MariaDB
	ComMulti            byte = 0xfe // MariaDB, withdrawn
)

var comNames = map[byte]string{
	ComQuit: "COM_QUIT", ComInitDB: "COM_INIT_DB", ComQuery: "COM_QUERY", ComFieldList: "COM_FIELD_LIST",
	ComStatistics: "COM_STATISTICS", ComProcessInfo: "COM_PROCESS_INFO", ComPing: "COM_PING",
	ComChangeUser: "COM_CHANGE_USER", ComBinlogDump: "COM_BINLOG_DUMP", ComTableDump: "COM_TABLE_DUMP",
	ComStmtPrepare: "COM_STMT_PREPARE", ComStmtExecute: "COM_STMT_EXECUTE", ComStmtSendLongData: "COM_STMT_SEND_LONG_DATA",
	ComStmtClose: "COM_STMT_CLOSE", ComStmtReset: "COM_STMT_RESET", ComSetOption: "COM_SET_OPTION",
	ComStmtFetch: "COM_STMT_FETCH", ComBinlogDumpGTID: "COM_BINLOG_DUMP_GTID", ComResetConnection: "COM_RESET_CONNECTION",
	ComStmtBulkExecute: "COM_STMT_BULK_EXECUTE", ComMulti: "COM_MULTI",
}

// Capability flags (CLIENT_*) the scanner reads.
const (
	ClientMySQL                     uint32 = 1 << 0 // CLIENT_LONG_PASSWORD; unset by MariaDB servers
	ClientCompress                  uint32 = 1 << 5
	ClientLocalFiles                uint32 = 1 << 7
	ClientProtocol41                uint32 = 1 << 9
	ClientSSL                       uint32 = 1 << 11
	ClientMultiStatements           uint32 = 1 << 16
	ClientDeprecateEOF              uint32 = 1 << 24
	ClientOptionalResultsetMetadata uint32 = 1 << 25
	ClientZstdCompression           uint32 = 1 << 26
	ClientQueryAttributes           uint32 = 1 << 27
)

// MariaDB's extended capabilities (the fourth to seventh bytes beyond the
// 32 bits of CLIENT_*), read only when the server is MariaDB.
const (
	MariaDBProgress      uint32 = 1 << 0 // MARIADB_CLIENT_PROGRESS
	MariaDBCacheMetadata uint32 = 1 << 4 // MARIADB_CLIENT_CACHE_METADATA
)

// Server status flags (SERVER_STATUS_* and SERVER_MORE_RESULTS_EXISTS).
const (
	StatusInTrans           uint16 = 0x0001
	StatusAutocommit        uint16 = 0x0002
	StatusMoreResultsExists uint16 = 0x0008
	StatusCursorExists      uint16 = 0x0040
	StatusNoBackslashEscape uint16 = 0x0200
)

// EventKind says what an Event reports.
type EventKind uint8

const (
	// EventCommand: a command is complete on the client's side, not yet
	// forwarded to the server (b[Start:End] is the whole command when
	// Start >= 0). A hold, or a cut before the command, acts here.
	EventCommand EventKind = iota + 1
	// EventAnswer: the server's whole answer to a command has come:
	// b[:End] ends with its last byte. A cut after the command acts here.
	EventAnswer
	// EventConnected: the connection phase is over, with the server's OK
	// (Answer.OK) or ERR.
	EventConnected
	// EventStop: the scanner stopped following the connection (Reason,
	// TLS) after reading b[:End]; it began to read what made it stop at
	// Start. Every byte from End on passes unread, and faults must not act
	// on this link.
	EventStop
)

var kindNames = [...]string{"", "command", "answer", "connected", "stop"}

func (k EventKind) String() string {
	if int(k) < len(kindNames) && k > 0 {
		return kindNames[k]
	}
	return "event?"
}

// Effect is where a command makes writes durable, as a Landing's kind in
// faults/: what the default match of a cut or a hold acts on.
type Effect uint8

const (
	NoEffect Effect = iota
	// EffectCommit: the command commits a transaction: COMMIT, or a
	// statement that commits an open one implicitly (BEGIN, DDL, SET
	// autocommit=1 with autocommit off).
	EffectCommit
	// EffectAutocommitWrite: a write outside a transaction, autocommit on:
	// it commits on its own.
	EffectAutocommitWrite
)

// String names the effect: commit, autocommit-write, or none.
func (e Effect) String() string {
	switch e {
	case EffectCommit:
		return "commit"
	case EffectAutocommitWrite:
		return "autocommit-write"
	}
	return "none"
}

// WriteKind is what a write barrier holds: the command writes or commits,
// and how (faults/' kindOfWrite).
type WriteKind uint8

const (
	NoWrite WriteKind = iota
	WriteCommit
	WriteAutocommit
	WriteInTransaction
)

// String names the kind: commit, autocommit, in-transaction, or none.
func (w WriteKind) String() string {
	switch w {
	case WriteCommit:
		return "commit"
	case WriteAutocommit:
		return "autocommit"
	case WriteInTransaction:
		return "in-transaction"
	}
	return "none"
}

// Command is one command the client sent.
type Command struct {
	// ID numbers the connection's commands from 1; an answer carries its
	// command's ID.
	ID uint64
	// Code is the command byte (ComQuery, ...).
	Code byte
	// SQL is the query of a COM_QUERY, the statement's text of a
	// COM_STMT_PREPARE, and the prepared text of the COM_STMT_* commands
	// that name a statement (empty for a statement id the scanner never
	// saw prepared).
	SQL string
	// Statements are SQL's statements, classified (one for a prepared
	// statement), for the commands that run SQL or prepare it: COM_QUERY,
	// COM_STMT_PREPARE, COM_STMT_EXECUTE, COM_STMT_BULK_EXECUTE. Only
	// those that run it move the transaction state and have an Effect.
	Statements []Statement
	// StmtID is the statement id of COM_STMT_EXECUTE, _CLOSE, _RESET,
	// _FETCH, _SEND_LONG_DATA and _BULK_EXECUTE.
	StmtID uint32
	// Reply: the server answers the command (not COM_QUIT, COM_STMT_CLOSE
	// or COM_STMT_SEND_LONG_DATA).
	Reply bool
	// Effect is where the command's first durable write lands; Write the
	// kind of its first write or commit (faults/' wireEvent kind, effect and
	// writeKind).
	Effect Effect
	Write  WriteKind
	// InTransaction: a transaction was open when the command was sent, as
	// far as the scanner knows (the server's status flags of the last
	// answer, and the commands sent since).
	InTransaction bool
	// lastSeq is the sequence id of the command's last packet: its answer
	// starts at the next.
	lastSeq byte
}

// Name is the command's name in the MySQL docs (COM_QUERY, ...).
func (c Command) Name() string {
	if n, ok := comNames[c.Code]; ok {
		return n
	}
	return fmt.Sprintf("COM_0x%02x", c.Code)
}

// Class is the class of the command's first statement (Other for a
// command that carries no SQL).
func (c Command) Class() Class {
	if len(c.Statements) == 0 {
		return Other
	}
	return c.Statements[0].Class
}

// Answer is the end of the server's answer to a command, or of the
// connection phase.
type Answer struct {
	// OK: it ended well (an OK packet, or the EOF or OK ending a result
	// set); false: an ERR packet (ErrCode, SQLState, Message).
	OK       bool
	ErrCode  uint16
	SQLState string
	Message  string
	// Status holds the server status flags of the packet that ended it,
	// when it has them (HasStatus): an ERR or a COM_STMT_PREPARE_OK does
	// not.
	Status    uint16
	HasStatus bool
	// Results counts the statements' results in the answer (an OK or a
	// result set each); Rows the result sets' rows.
	Results int
	Rows    int64
	// StmtID is the statement id a COM_STMT_PREPARE_OK gave.
	StmtID uint32
}

// InTransaction reports whether a transaction is open after the answer
// (SERVER_STATUS_IN_TRANS); false when the answer has no status.
func (a Answer) InTransaction() bool { return a.HasStatus && a.Status&StatusInTrans != 0 }

// Autocommit reports SERVER_STATUS_AUTOCOMMIT; false when the answer has
// no status.
func (a Answer) Autocommit() bool { return a.HasStatus && a.Status&StatusAutocommit != 0 }

// Event is something the scanner found in a chunk. Offsets are in the
// chunk just scanned: End just past the event's last byte, Start at its
// first, negative when it began in an earlier chunk.
type Event struct {
	Kind       EventKind
	Start, End int
	// Command is the command (EventCommand) or the command answered
	// (EventAnswer; ID 0 for an ERR the server sent unasked, as before it
	// closes an idle connection).
	Command Command
	// Answer is the answer (EventAnswer, EventConnected).
	Answer Answer
	// Reason says why the scanner stopped (EventStop); TLS: because the
	// client asked for TLS (an SSLRequest), after which nothing can be
	// read.
	Reason string
	TLS    bool
}

// phase of the connection.
type phase uint8

const (
	phaseGreeting phase = iota // waiting for the server's greeting
	phaseAuth                  // handshake response and authentication exchange
	phaseCommand
	phaseClosed // the connection phase failed; nothing more to follow
)

// prepared is a statement the server prepared.
type prepared struct {
	sql   string
	stmts []Statement
}

// Scanner follows one connection's MySQL client/server protocol, both
// directions. Client and Server may be called from two goroutines; each
// must see its direction's bytes in order, and before they are forwarded
// (so a command is known before its answer can come, and an answer before
// the client can send what follows it).
type Scanner struct {
	mu         sync.Mutex
	client     framer
	server     framer
	base       int64   // stream offset of the chunk being scanned
	reading    *framer // the direction being scanned
	evs        []Event
	phase      phase
	stopped    string
	serverCaps uint32
	serverExt  uint32
	caps       uint32 // negotiated: the client's, as far as the server has them
	ext        uint32
	mariadb    bool
	responded  bool // the client's handshake response was seen

	ids      uint64
	pending  []*pending // commands awaiting their answers, oldest first
	stmts    map[uint32]prepared
	lastPrep prepared // the last COM_STMT_PREPARE sent (MariaDB's id -1)
	infile   bool     // the client is sending a LOCAL INFILE's contents

	// The transaction state as the scanner predicts it (resynced from the
	// server status flags of each answer).
	inTrans, autocommit, noBackslash bool
}

// Client/server bounds on the payload bytes kept: a query's text is read
// up to 1 MiB; a server packet's first bytes hold all the scanner reads.
const (
	keepClient = 1 << 20
	keepServer = 1024
)

// New returns a scanner for a connection from its first byte.
func New() *Scanner {
	s := &Scanner{
		client:     framer{keep: keepClient},
		server:     framer{keep: keepServer},
		stmts:      map[uint32]prepared{},
		autocommit: true,
	}
	s.server.check = func(seq byte, n int) error {
		if s.phase == phaseGreeting && (seq != 0 || n > maxGreeting) {
			return errors.New("the server's first packet is not a MySQL greeting")
		}
		return nil
	}
	return s
}

// maxGreeting bounds the length of a server's greeting (a few dozen bytes
// in practice).
const maxGreeting = 4096

// Stopped reports whether the scanner has stopped following the
// connection, and why.
func (s *Scanner) Stopped() (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stopped, s.stopped != ""
}

// Capabilities returns the capability flags the client and the server
// agreed on, and MariaDB's extended ones (0 on MySQL), once the client's
// handshake response has been scanned.
func (s *Scanner) Capabilities() (caps, mariadb uint32) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps, s.ext
}

// ClientPartial is how many of the client's bytes scanned so far belong
// to a command (or other payload) not yet complete: the last ones, which
// may run back into earlier chunks. A relay that keeps them back, as
// faults/' watch toxic keeps an incomplete message, never forwards part of a
// command it may yet hold; the server would otherwise sit on a partial
// packet, and drop the connection after its net_read_timeout.
func (s *Scanner) ClientPartial() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped != "" {
		return 0
	}
	return s.client.partial()
}

// Client scans the next bytes the client sent and returns what they hold,
// in order. After an EventStop it returns nothing more.
func (s *Scanner) Client(b []byte) []Event {
	return s.feed(&s.client, b, s.clientPayload)
}

// Server scans the next bytes the server sent and returns what they hold,
// in order.
func (s *Scanner) Server(b []byte) []Event {
	return s.feed(&s.server, b, s.serverPayload)
}

func (s *Scanner) feed(f *framer, b []byte, handle func(*payload)) []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evs = nil
	s.base, s.reading = f.pos, f
	for i := 0; i < len(b) && s.stopped == ""; {
		j, p, err := f.next(b, i)
		if err != nil {
			s.stop(j, err.Error(), false)
			break
		}
		i = j
		if p != nil {
			handle(p)
		}
	}
	if s.stopped != "" {
		f.pos = s.base + int64(len(b))
	}
	return s.evs
}

// rel turns a stream offset into an offset in the chunk being scanned.
func (s *Scanner) rel(off int64) int { return int(off - s.base) }

// stop stops following the connection: what made it stop began at start
// (an offset in the chunk) and ends where the scanner has read to.
func (s *Scanner) stop(start int, reason string, tls bool) {
	if s.stopped != "" {
		return
	}
	s.stopped = reason
	end := s.rel(s.reading.pos)
	s.evs = append(s.evs, Event{Kind: EventStop, Start: min(start, end), End: end, Reason: reason, TLS: tls})
}

// clientPayload follows one payload from the client.
func (s *Scanner) clientPayload(p *payload) {
	switch s.phase {
	case phaseGreeting, phaseClosed:
		return
	case phaseAuth:
		if !s.responded {
			s.responded = true
			s.handshakeResponse(p)
		}
		return // later payloads: the authentication exchange
	}
	if s.infile {
		// A LOCAL INFILE's contents, ended by an empty payload.
		if p.size == 0 {
			s.infile = false
		}
		s.seqAfterClient(p)
		return
	}
	if p.seq != 0 {
		// Not a command: a reply within an exchange (COM_CHANGE_USER's
		// authentication).
		s.seqAfterClient(p)
		return
	}
	if p.size == 0 {
		s.stop(s.rel(p.start), "the client sent an empty command", false)
		return
	}
	s.command(p)
}

// seqAfterClient records that the client's payload p continues the
// exchange of the oldest pending command: the server's next packet follows
// it.
func (s *Scanner) seqAfterClient(p *payload) {
	if len(s.pending) > 0 {
		s.pending[0].next = p.last + 1
	}
}

// handshakeResponse reads the client's HandshakeResponse41 (or SSLRequest).
func (s *Scanner) handshakeResponse(p *payload) {
	h := p.head
	if len(h) < 4 {
		s.stop(s.rel(p.start), "the client's handshake response is too short", false)
		return
	}
	caps := uint32(binary.LittleEndian.Uint16(h))
	if caps&ClientProtocol41 == 0 {
		s.stop(s.rel(p.start), "the client speaks the protocol before 4.1 (no CLIENT_PROTOCOL_41), which is not followed", false)
		return
	}
	caps = binary.LittleEndian.Uint32(h)
	if caps&ClientSSL != 0 {
		s.stop(s.rel(p.start), "the client asked for TLS (SSLRequest): the protocol cannot be read, so faults cannot act on this link", true)
		return
	}
	s.caps = caps & s.serverCaps
	if s.mariadb && len(h) >= 32 {
		// The filler's last 4 bytes carry MariaDB's extended capabilities.
		s.ext = binary.LittleEndian.Uint32(h[28:32]) & s.serverExt
	}
}

// lenenc reads a length-encoded integer.
func lenenc(b []byte) (v uint64, n int, ok bool) {
	if len(b) == 0 {
		return 0, 0, false
	}
	switch c := b[0]; {
	case c < 0xfb:
		return uint64(c), 1, true
	case c == 0xfc && len(b) >= 3:
		return uint64(b[1]) | uint64(b[2])<<8, 3, true
	case c == 0xfd && len(b) >= 4:
		return uint64(b[1]) | uint64(b[2])<<8 | uint64(b[3])<<16, 4, true
	case c == 0xfe && len(b) >= 9:
		return binary.LittleEndian.Uint64(b[1:9]), 9, true
	}
	return 0, 0, false
}

// Answering returns the ID of the command whose answer the server's next
// bytes belong to: the oldest command still awaiting its answer, or, with
// none, the next command's. A relay that cuts after an answer passes the
// bytes that follow the last answer it saw end only while they answer an
// earlier command.
func (s *Scanner) Answering() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) > 0 {
		return s.pending[0].cmd.ID
	}
	return s.ids + 1
}
