// Package mysqlwire follows the MySQL client/server protocol as it passes
// through a relay, both directions, and says where each command and each
// answer ends: the scanner that database-link faults on MySQL and MariaDB
// targets act on, as faults/' pgScanner is for PostgreSQL. It imports only
// the standard library, so any layer may use it.
//
// # How faults/ uses it
//
// One Scanner per connection through the watched link (faults/wire.go:
// myScanner on the client's side, myAnswers on the server's). The client-
// to-server side calls Client with each chunk before forwarding any of it,
// the server-to-client side calls Server likewise (a command must be
// scanned before its answer can come, an answer before the client can
// send what follows it). In toxiproxy the two directions are two toxics
// whose states are made in a fixed order, which is how repliesToxic finds
// its dbConn (watchToxic.last): the same trick hands both the
// connection's Scanner (dbConn.my). Each call returns the chunk's events
// in order, with offsets in that chunk; the client side keeps back the
// bytes of an unfinished command (ClientPartial), as the watch toxic keeps
// pend, so that what it holds is whole (an event's negative Start then
// reaches back into the bytes kept).
//
//   - An EventCommand stands for the watch toxic's scanEvent, before the
//     command is forwarded: Command.SQL is wireEvent.sql; Command.Effect
//     is the landing (EffectCommit: idemcheck.LandedCommit, the default match of
//     db-cut and db-hold; EffectAutocommitWrite: LandedAutocommitWrite;
//     NoEffect: LandedStatement); Command.Write is wireEvent.writeKind
//     (WriteCommit, WriteAutocommit, WriteInTransaction: LandedCommit,
//     LandedAutocommitWrite, LandedWrite).
//   - db-cut (a cut before the command): forward b[:Start], close.
//   - db-hold, and the freeze at the work's write (a hold matched on its
//     SQL): forward b[:Start], keep b[Start:] until released; then go on
//     with the chunk's later events.
//   - The write barrier: a connection's first EventCommand with a Write
//     since the barrier was armed is held as db-hold holds; the barrier
//     releases them together, or in turn: one, then the next once the
//     EventAnswer with that Command.ID has come (dbConn.finished: the
//     answers are counted by command, not by ReadyForQuery).
//   - db-cut-after (cut after a COMMIT's answer reached the link, before
//     the target read it): at the matching EventCommand (a COMMIT, or an
//     autocommitted write: any with an Effect), let it through
//     and set a hold on its answer (faults' answer hold, decided as a cut
//     before the command goes), at its Command.ID: cutAt. The server
//     side then forwards answers up to the End of the EventAnswer of the
//     command before (answers follow each other with no byte between:
//     the one to cutAt starts where the one before ended, at its own
//     Start) and withholds everything after; at the EventAnswer whose
//     Command.ID is cutAt, the COMMIT's OK has come whole (Answer.OK, and
//     Answer.InTransaction false: it committed; an ERR says it did not),
//     and it closes both sides without forwarding a byte of it.
//   - TestFaultsActOnEvents does a hold and a cut after a COMMIT so,
//     against MariaDB: the held INSERT has not run until released, and
//     the cut COMMIT has committed though its client never heard; faults/'
//     TestMySQL* do the same through a database Link.
//   - A connection has started, and counts as a session, once it sends
//     its first command.
//   - EventStop with TLS is the SSLRequest the watch toxic refuses
//     (scanRefuse: close it, and say why: Link.Refused); any other EventStop is a stream that cannot
//     be followed, refused likewise with its Reason. After it the scanner
//     says nothing, and every byte passes.
//
// # What it reads (the MySQL docs' names)
//
// Packets: a 3-byte little-endian payload length and a sequence id; a
// payload of 0xffffff bytes or more goes as packets of 0xffffff and a
// shorter last one (empty if need be), joined here into one payload.
// Chunks may cut anything anywhere; the scanner keeps no more than the
// first MiB of a command and the first KiB of a server packet, so a large
// row or blob costs nothing.
//
// Connection phase: the server's Initial Handshake Packet (protocol 10, or
// an ERR_Packet refusing the connection) gives the server's capability
// flags, and a MariaDB server's extended ones (where CLIENT_MYSQL, bit 0,
// is unset); the client's HandshakeResponse41 gives the client's, and the
// negotiated set is both. A client that sets CLIENT_SSL sends an
// SSLRequest and then TLS: the scanner stops (EventStop, TLS). A client
// without CLIENT_PROTOCOL_41, and a connection that negotiates
// CLIENT_COMPRESS or CLIENT_ZSTD_COMPRESSION_ALGORITHM, stop it too. The
// authentication exchange (AuthSwitchRequest 0xfe, AuthMoreData 0x01,
// the client's replies) passes; the server's OK_Packet or ERR_Packet ends
// it (EventConnected).
//
// Command phase: a client payload with sequence id 0 is a command (other
// client payloads belong to the exchange under way: a LOCAL INFILE's
// contents up to an empty payload, COM_CHANGE_USER's authentication).
// COM_QUERY carries SQL (after the query attributes, with
// CLIENT_QUERY_ATTRIBUTES), classified by
// Classify into begin, commit, rollback, write, read, set-autocommit and
// other, statement by statement. COM_STMT_PREPARE's text is remembered
// under the statement id of its COM_STMT_PREPARE_OK, and each
// COM_STMT_EXECUTE (and MariaDB's COM_STMT_BULK_EXECUTE, and id
// 0xffffffff: the statement prepared last) is classified by it.
// COM_STMT_CLOSE, COM_STMT_SEND_LONG_DATA and COM_QUIT get no answer;
// COM_STMT_RESET, COM_PING and the other commands get one packet.
// COM_BINLOG_DUMP(_GTID) starts a replication stream, which stops the
// scanner.
//
// Answers: an OK_Packet, an ERR_Packet, a LOCAL INFILE request (0xfb,
// then the client's file, then OK or ERR), or a result set: the column
// count (with MARIADB_CLIENT_CACHE_METADATA or
// CLIENT_OPTIONAL_RESULTSET_METADATA, a byte saying whether the column
// definitions follow), the Column Definitions, an EOF_Packet unless
// CLIENT_DEPRECATE_EOF, the rows (text or binary), and an EOF_Packet, or
// with CLIENT_DEPRECATE_EOF an OK_Packet with a 0xfe header (told from a
// row beginning with 0xfe by its length, under 0xffffff), or an ERR. An
// OK or EOF with SERVER_MORE_RESULTS_EXISTS means another result follows
// in the same answer. COM_STMT_PREPARE_OK is followed by the definitions
// of its parameters and of its columns (each group with an EOF unless
// CLIENT_DEPRECATE_EOF). A cursor opened by COM_STMT_EXECUTE
// (SERVER_STATUS_CURSOR_EXISTS) ends the answer after the definitions;
// COM_STMT_FETCH gets rows. MariaDB's progress reports (an ERR with code
// 0xffff, with MARIADB_CLIENT_PROGRESS) are not the end. An EventAnswer
// says at the answer's last byte whether it was OK or ERR, and carries
// the server status flags of its last packet: SERVER_STATUS_IN_TRANS and
// SERVER_STATUS_AUTOCOMMIT, from which the scanner also resyncs the
// transaction state it classifies writes with (and
// SERVER_STATUS_NO_BACKSLASH_ESCAPES, how it lexes strings). An ERR the
// server sends unasked (before closing an idle connection) is an answer
// to command 0.
//
// Pipelining is followed: commands may be sent before earlier ones are
// answered; each answer carries its command.
//
// What makes the stream unreadable stops the scanner with a reason,
// never a panic: a first server packet that is no greeting, a packet out
// of sequence within a payload or an answer, a server packet no command
// asked for, an answer of the wrong shape (FuzzScanner).
//
// Not seen: writes inside stored routines (CALL p()), SQL-level prepared
// statements (PREPARE/EXECUTE as SQL), triggers; a query's statements past
// its first MiB.
package mysqlwire
