package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dpkit/dpkit/internal/testcert"
)

// serving starts srv.Serve on a fresh 127.0.0.1 listener (TLS with cfg) and returns its
// address; the server stops when the test ends.
func serving(t *testing.T, srv *Server, cfg *tls.Config) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if cfg != nil {
		ln = tls.NewListener(ln, cfg)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-done })
	return ln.Addr().String()
}

// rawRequest sends text on a new connection (TLS with cfg) and returns the status, the
// Content-Type and the body of the answer.
func rawRequest(t *testing.T, addr string, cfg *tls.Config, text string) (int, string, string) {
	t.Helper()
	var c net.Conn
	var err error
	if cfg != nil {
		c, err = tls.Dial("tcp", addr, cfg)
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	go io.WriteString(c, text) // the server may answer before reading all of it
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("reading the answer to %.40q: %v", text, err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, res.Header.Get("Content-Type"), string(body)
}

// TestServerErrorsJSON is the test of issue #20 item 4 for the errors that net/http
// answers itself, before any handler: each comes in the JSON error shape, with its
// status, over plain HTTP and over TLS; ordinary answers are unchanged.
func TestServerErrorsJSON(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	certFile, keyFile, pool := testcert.Files(t, dir)
	plain := serving(t, e.srv, nil)
	secure := serving(t, e.srv, testcert.Config(t, certFile, keyFile))
	client := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	huge := strings.Repeat("x", 2*maxHeaderBytes)
	for _, tc := range []struct {
		name, request string
		status        int
		want          string
	}{
		{"header too large", "GET /healthz HTTP/1.1\r\nHost: a\r\nX-Big: " + huge + "\r\n\r\n", 431, "request header fields too large"},
		{"no Host", "GET /healthz HTTP/1.1\r\n\r\n", 400, "missing required Host header"},
		{"malformed request line", "GARBAGE\r\n\r\n", 400, "bad request"},
		{"unknown transfer coding", "POST /v1/keys HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "not implemented"},
		{"unsupported version", "GET /healthz HTTP/3.0\r\nHost: a\r\n\r\n", 505, "version not supported"},
	} {
		for _, via := range []struct {
			name string
			addr string
			cfg  *tls.Config
		}{{"http", plain, nil}, {"https", secure, client}} {
			t.Run(tc.name+"/"+via.name, func(t *testing.T) {
				status, ct, body := rawRequest(t, via.addr, via.cfg, tc.request)
				var v map[string]any
				if status != tc.status || !strings.HasPrefix(ct, "application/json") || json.Unmarshal([]byte(body), &v) != nil || len(v) != 1 {
					t.Fatalf("status %d, Content-Type %q, body %q; want %d in the JSON error shape", status, ct, body, tc.status)
				}
				if msg, _ := v["error"].(string); !strings.Contains(strings.ToLower(msg), strings.ToLower(tc.want)) {
					t.Fatalf("error %q, want it to say %q", msg, tc.want)
				}
			})
		}
	}
	// Ordinary answers go through untouched: JSON from the API, HTML for the page.
	for _, via := range []struct {
		addr string
		cfg  *tls.Config
	}{{plain, nil}, {secure, client}} {
		if status, ct, body := rawRequest(t, via.addr, via.cfg, "GET /healthz HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); status != 200 || !strings.Contains(body, `"ok"`) || !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("healthz: %d %q %q", status, ct, body)
		}
		if status, ct, _ := rawRequest(t, via.addr, via.cfg, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"); status != 200 || !strings.HasPrefix(ct, "text/html") {
			t.Fatalf("page: %d %q", status, ct)
		}
	}
}

// TestTLS: the API over HTTPS with a generated certificate, end to end: a client that
// trusts the certificate queries, one that does not is refused by the handshake, and a
// plain-text request to the TLS port gets no answer in clear.
func TestTLS(t *testing.T) {
	e := newEnv(t)
	certFile, keyFile, pool := testcert.Files(t, t.TempDir())
	addr := serving(t, e.srv, testcert.Config(t, certFile, keyFile))
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool}
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	req, _ := http.NewRequest("POST", "https://"+addr+"/v1/datasets/flu/query", strings.NewReader(`{"sql":"SELECT COUNT(*) FROM flu"}`))
	req.Header.Set("Authorization", "Bearer "+e.analyst)
	res, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	json.NewDecoder(res.Body).Decode(&v)
	res.Body.Close()
	if res.StatusCode != 200 || v["release"] != 1.0 {
		t.Fatalf("query over TLS: %d %v", res.StatusCode, v)
	}
	if _, err := http.Get("https://" + addr + "/healthz"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client that does not trust the certificate: %v", err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: a\r\n\r\n")
	buf, _ := io.ReadAll(c)
	if strings.Contains(string(buf), "ok") || strings.HasPrefix(string(buf), "HTTP/1.1 200") {
		t.Fatalf("plain HTTP on the TLS port was answered: %q", buf)
	}
}
