package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// net/http answers some malformed requests itself, before any handler runs, with a
// plain-text response written in one piece to the connection: 431 for headers larger
// than the server's limit, 400 for a malformed request (a missing or malformed Host
// header, say), 501 for an unknown transfer coding, 505 for an unsupported HTTP version.
// jsonErrorListener's connections recognise exactly those writes — a status line
// followed by the fixed headers net/http uses for them, which its own header writer
// (sorted, with a Date) never produces for a handler's response — and send the same
// status with the service's one JSON error shape instead.

// plainErrorHeaders are the headers net/http writes with its own error responses.
const plainErrorHeaders = "\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n"

// jsonErrorListener wraps the connections of a listener (above TLS, if any).
type jsonErrorListener struct{ net.Listener }

func (l jsonErrorListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return jsonErrorConn{c}, nil
}

type jsonErrorConn struct{ net.Conn }

func (c jsonErrorConn) Write(b []byte) (int, error) {
	if j, ok := jsonServerError(b); ok {
		if _, err := c.Conn.Write(j); err != nil {
			return 0, err
		}
		return len(b), nil
	}
	return c.Conn.Write(b)
}

// jsonServerError returns the JSON form of one of net/http's own plain-text error
// responses, and false for anything else.
func jsonServerError(b []byte) ([]byte, bool) {
	const proto = "HTTP/1.1 "
	i := bytes.Index(b, []byte(plainErrorHeaders))
	if !bytes.HasPrefix(b, []byte(proto)) || i < 0 || bytes.IndexByte(b[:i], '\n') >= 0 {
		return nil, false
	}
	status := string(b[len(proto):i]) // "431 Request Header Fields Too Large", "400 Bad Request: missing required Host header"
	code, reason, _ := strings.Cut(status, " ")
	n, err := strconv.Atoi(code)
	if err != nil || n < 400 || n > 599 {
		return nil, false
	}
	phrase, detail, _ := strings.Cut(reason, ": ") // "Bad Request", "missing required Host header"
	msg := strings.ToLower(phrase)
	if detail != "" {
		msg += ": " + detail
	}
	if n == http.StatusRequestHeaderFieldsTooLarge {
		msg += fmt.Sprintf(" (the server reads at most %d bytes of headers)", maxHeaderBytes)
	}
	body, _ := json.Marshal(errorBody{Error: msg})
	body = append(body, '\n')
	reason = phrase // the status line keeps the reason phrase only
	return fmt.Appendf(nil, "%s%d %s\r\nContent-Type: application/json; charset=utf-8\r\nCache-Control: no-store\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		proto, n, reason, len(body), body), true
}
