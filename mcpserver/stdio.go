package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/canonkb/canon/server"
)

// MaxMessageBytes bounds one MCP message, over stdio (a line) as over HTTP (a
// request body): the limit of every request to canon serve but ingest.
const MaxMessageBytes = server.MaxRequestBytes

// StdioTransport serves MCP as newline-delimited JSON-RPC over a reader and a
// writer (stdin and stdout for `canon mcp`). The SDK's StdioTransport reads
// stdin with one JSON decoder, so one malformed line or one line over its
// limit ends the session (go-sdk#1209); here each line is checked alone and a
// bad one is answered with a JSON-RPC error while the session keeps serving:
//   - not JSON: -32700 (parse error), id null;
//   - JSON but not a JSON-RPC message, or a batch (removed from MCP in
//     2025-06-18): -32600 (invalid request), with the message's id when it has one;
//   - longer than MaxLineBytes: -32600, "request too large", with its id when
//     it comes early in the line (as clients write it).
//
// Lines that pass reach the SDK byte for byte.
type StdioTransport struct {
	// Reader and Writer default to os.Stdin and os.Stdout.
	Reader io.Reader
	Writer io.Writer
	// MaxLineBytes bounds one line (its newline aside); 0 means MaxMessageBytes.
	MaxLineBytes int
	// Logger records each refused line (nothing when nil).
	Logger *slog.Logger
}

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	in, out := t.Reader, t.Writer
	if in == nil {
		in = os.Stdin
	}
	if out == nil {
		out = os.Stdout
	}
	limit := t.MaxLineBytes
	if limit <= 0 {
		limit = MaxMessageBytes
	}
	log := t.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &lockedWriter{w: out}
	pr, pw := io.Pipe()
	f := &lineFilter{r: bufio.NewReaderSize(in, 64<<10), limit: limit, pass: pw, answer: w, log: log}
	// Like the SDK's reader, this goroutine ends with stdin (or once the session
	// has closed the pipe and the next line arrives): a read of stdin cannot be interrupted.
	go f.run()
	// Every line that reaches the SDK is within limit already.
	return (&mcp.IOTransport{Reader: pr, Writer: nopCloser{w}, MaxLineLength: -1}).Connect(ctx)
}

// lockedWriter keeps the SDK's messages and the filter's answers whole: each is one Write.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// nopCloser leaves stdout open when the session closes, as the SDK's stdio transport does.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// LineError is a line of the stdio transport refused before it reached the
// SDK, as the JSON-RPC error it is answered with.
type LineError struct {
	ID      any // the message's id (a string or number), nil when it could not be read
	Code    int64
	Message string
}

func (e *LineError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// lineFilter passes each valid line to the SDK and answers the others.
type lineFilter struct {
	r      *bufio.Reader
	limit  int
	pass   *io.PipeWriter
	answer io.Writer
	log    *slog.Logger
	buf    []byte
}

// idPrefixBytes is how much of an oversized line is searched for its id.
const idPrefixBytes = 64 << 10

func (f *lineFilter) run() {
	for {
		line, over, err := f.next()
		if over {
			f.refuse(&LineError{ID: idFrom(line[:min(len(line), idPrefixBytes)]), Code: jsonrpc.CodeInvalidRequest,
				Message: fmt.Sprintf("request too large: a message may be at most %d bytes (one line); this one is longer", f.limit)})
		} else if msg := bytes.TrimSpace(line); len(msg) > 0 {
			if lerr := check(msg); lerr != nil {
				f.refuse(lerr)
			} else if _, werr := f.pass.Write(append(msg, '\n')); werr != nil {
				return // the session has ended
			}
		}
		if err != nil {
			// EOF (the client left) or a read error ends the session, as it would the SDK's.
			if errors.Is(err, io.EOF) {
				err = nil
			}
			f.pass.CloseWithError(err)
			return
		}
	}
}

// next reads one line. A line longer than the limit is read to its end but
// only its first limit bytes are kept, and over is set.
func (f *lineFilter) next() (line []byte, over bool, err error) {
	f.buf = f.buf[:0]
	for {
		chunk, err := f.r.ReadSlice('\n')
		if !over {
			if len(f.buf)+len(bytes.TrimRight(chunk, "\r\n")) > f.limit {
				over = true
			}
			f.buf = append(f.buf, chunk[:min(len(chunk), f.limit+2-len(f.buf))]...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return f.buf, over, err
	}
}

// check returns the error a line is answered with, nil when it may reach the SDK.
func check(msg []byte) *LineError {
	var v json.RawMessage
	if err := json.Unmarshal(msg, &v); err != nil {
		return &LineError{Code: jsonrpc.CodeParseError, Message: "parse error: the line is not JSON: " + err.Error()}
	}
	if msg[0] == '[' {
		return &LineError{Code: jsonrpc.CodeInvalidRequest,
			Message: "invalid request: JSON-RPC batches are not supported; send one message a line"}
	}
	if _, err := jsonrpc.DecodeMessage(msg); err != nil {
		return &LineError{ID: idFrom(msg), Code: jsonrpc.CodeInvalidRequest,
			Message: "invalid request: not a JSON-RPC 2.0 message: " + err.Error()}
	}
	return nil
}

// refuse answers a refused line and notes it in the log.
func (f *lineFilter) refuse(e *LineError) {
	f.log.Warn("MCP message refused", "code", e.Code, "err", e.Message)
	// Not jsonrpc.EncodeMessage: it leaves out an id that is null, which JSON-RPC requires here.
	data, err := json.Marshal(errorResponse{JSONRPC: "2.0", ID: e.ID, Error: wireError{Code: e.Code, Message: e.Message}})
	if err != nil {
		return // only strings and numbers: cannot fail
	}
	f.answer.Write(append(data, '\n')) //nolint:errcheck // the client has gone if the write fails; the next read ends the session
}

type errorResponse struct {
	JSONRPC string    `json:"jsonrpc"`
	ID      any       `json:"id"`
	Error   wireError `json:"error"`
}

type wireError struct {
	Code    int64  `json:"code"`
	Message string `json:"message"`
}

// idFrom reads the id of a JSON object from its start, which may be cut short:
// a string or number at the top level, nil when there is none before the cut
// or it is not a valid id.
func idFrom(prefix []byte) any {
	dec := json.NewDecoder(bytes.NewReader(prefix))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		if key == "id" {
			tok, err := dec.Token()
			if err != nil {
				return nil
			}
			switch tok.(type) {
			case string, json.Number:
				return tok
			}
			return nil
		}
		if skipValue(dec) != nil {
			return nil
		}
	}
}

// skipValue reads past one value (nested objects and arrays whole).
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
