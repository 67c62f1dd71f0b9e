package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	"github.com/dpkit/dpkit"
	"github.com/dpkit/dpkit/internal/registry"
	"github.com/dpkit/dpkit/query"
)

// errorBody is the one JSON shape of every error response. Position is the byte offset
// of a problem in the query text (bad SQL only).
type errorBody struct {
	Error    string `json:"error"`
	Position *int   `json:"position,omitempty"`
}

// httpError is an error with its HTTP status.
type httpError struct {
	status int
	msg    string
	pos    *int
}

func (e *httpError) Error() string { return e.msg }

func errorf(status int, format string, args ...any) *httpError {
	return &httpError{status: status, msg: fmt.Sprintf(format, args...)}
}

// Canned errors.
var (
	errUnauthorized = errorf(http.StatusUnauthorized, "missing or invalid API key: send the header Authorization: Bearer KEY")
	errAdminOnly    = errorf(http.StatusForbidden, "this request needs an admin key")
)

// notFound hides whether a dataset exists from keys that may not see it.
func notFound(name string) *httpError {
	return errorf(http.StatusNotFound, "dataset %q not found", name)
}

// classify maps an error to its status and message.
func classify(err error) *httpError {
	var he *httpError
	var qe *query.Error
	var ce *query.CSVError
	var pe *dpkit.ParamError
	var mbe *http.MaxBytesError
	var ie *dpkit.InfeasibleError
	var te errTimeout
	var ne net.Error
	switch {
	case errors.As(err, &he):
		return he
	case errors.As(err, &te):
		return errorf(http.StatusUnprocessableEntity, "%s", te.Error())
	case errors.As(err, &qe):
		pos := qe.Pos
		return &httpError{status: http.StatusBadRequest, msg: "sql: " + qe.Msg + " (at offset " + strconv.Itoa(qe.Pos) + ")", pos: &pos}
	case errors.As(err, &ce):
		return errorf(http.StatusBadRequest, "%s", trimPrefix(ce.Error()))
	case errors.As(err, &pe) && pe.Value == nil:
		return errorf(http.StatusBadRequest, "missing %s: want %s", pe.Name, pe.Want)
	case errors.As(err, &pe):
		return errorf(http.StatusBadRequest, "invalid %s = %v: want %s", pe.Name, pe.Value, pe.Want)
	case errors.As(err, &mbe):
		return errorf(http.StatusRequestEntityTooLarge, "request body larger than %d bytes", mbe.Limit)
	case errors.As(err, &ne) && ne.Timeout():
		return errorf(http.StatusRequestTimeout, "the request was not received within the server's read timeout")
	case errors.Is(err, ErrBudgetExceeded):
		return errorf(http.StatusConflict, "%s", trimPrefix(err.Error()))
	case errors.Is(err, ErrKeyConflict):
		return errorf(http.StatusConflict, "%s", trimPrefix(err.Error()))
	case errors.As(err, &ie):
		// An infeasible request (a budget refusal matched ErrBudgetExceeded above): the
		// request asks for what cannot be done soundly, e.g. a quantile at too small an ε.
		return errorf(http.StatusBadRequest, "infeasible: %s", ie.Msg)
	case errors.Is(err, ErrExists), errors.Is(err, registry.ErrExists):
		return errorf(http.StatusConflict, "%s", trimPrefix(err.Error()))
	case errors.Is(err, ErrNotFound), errors.Is(err, registry.ErrNotFound):
		return errorf(http.StatusNotFound, "%s", trimPrefix(err.Error()))
	}
	return errorf(http.StatusInternalServerError, "internal error")
}

// trimPrefix drops a package prefix ("server: ", "query: ", "ledger: ") from a message.
func trimPrefix(msg string) string {
	for _, p := range []string{"server: ", "query: ", "ledger: ", "dpkit: "} {
		if len(msg) > len(p) && msg[:len(p)] == p {
			return msg[len(p):]
		}
	}
	return msg
}

// writeError sends err as the JSON error shape with its status. Internal errors are
// reported to the Server's ErrorLog (if any), never to the client; a request whose
// client has gone is neither answered nor logged.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, errBusy) {
		w.Header().Set("Retry-After", "1")
	}
	if r.Context().Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return
	}
	he := classify(err)
	if he.status == http.StatusInternalServerError {
		s.logf("%v", err)
	}
	writeJSON(w, he.status, errorBody{Error: he.msg, Position: he.pos})
}

// logf reports a problem to the Server's ErrorLog, if any.
func (s *Server) logf(format string, args ...any) {
	if s.opts.ErrorLog != nil {
		s.opts.ErrorLog.Printf("server: "+format, args...)
	}
}

// writeJSON sends v with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // the client may be gone; nothing to do about it
}
