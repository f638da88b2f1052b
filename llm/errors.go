package llm

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/canonkb/canon/domain"
)

// ProviderError is a failure reported by, or on the way to, a remote provider.
//
// Its message is built by this package from the HTTP status and the server's own
// error message; it never holds the SDK's error text (which may quote URLs,
// headers or bodies) and every occurrence of the configured API key is replaced
// by "[redacted]", so the error is safe to log and to show.
//
// Errors of the provider itself (unreachable, 5xx or 429 after retries, 401/403,
// 404 model not found, overloaded mid-stream, timeout) match ErrUnavailable with
// errors.Is. A request the server rejects as malformed (400, 413, 422, or an
// invalid_request_error event) does not: that is a bug on our side (or a prompt
// too large for the model), and the caller should report it as an internal
// error, not as the provider being down.
type ProviderError struct {
	Provider    string // "openai" or "anthropic"
	StatusCode  int    // HTTP status; 0 when no response arrived, 200 for errors inside the stream
	Type        string // the server's error type when it gave one, e.g. "rate_limit_error"
	Message     string // redacted, human-readable detail
	Attempts    int    // HTTP attempts made for this generation (retries included)
	Unavailable bool   // whether the error matches ErrUnavailable

	cause error // only errors safe to expose (context errors), for errors.Is
	// retryable marks a failure after a 200 response that may be retried when no
	// text has been emitted yet (status errors are retried by the SDK itself).
	retryable bool
}

func (e *ProviderError) Error() string {
	var b strings.Builder
	b.WriteString(e.Provider)
	b.WriteString(": ")
	if e.Unavailable {
		b.WriteString(ErrUnavailable.Error())
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	if e.Attempts > 1 {
		fmt.Fprintf(&b, " (after %d attempts)", e.Attempts)
	}
	return b.String()
}

// Unwrap lets errors.Is find ErrUnavailable (for provider failures) and, for a
// timeout, context.DeadlineExceeded.
func (e *ProviderError) Unwrap() []error {
	var errs []error
	if e.Unavailable {
		errs = append(errs, ErrUnavailable)
	}
	if e.cause != nil {
		errs = append(errs, e.cause)
	}
	return errs
}

// redactor removes a secret from text that goes into errors.
type redactor string

func (r redactor) clean(s string) string {
	if r == "" {
		return s
	}
	return strings.ReplaceAll(s, string(r), "[redacted]")
}

// maxServerMessage bounds how much of a server's error text goes into an error.
const maxServerMessage = 400

// errorFromStatus classifies an HTTP error response.
func errorFromStatus(provider string, red redactor, status int, typ, serverMsg string, attempts int) *ProviderError {
	e := &ProviderError{Provider: provider, StatusCode: status, Type: typ, Attempts: attempts, Unavailable: true}
	var hint string
	switch {
	case status == http.StatusBadRequest || status == http.StatusRequestEntityTooLarge || status == http.StatusUnprocessableEntity:
		// Our request is wrong (or too large for the model): not the provider's fault.
		e.Unavailable = false
		hint = "request rejected"
	case status == http.StatusUnauthorized:
		hint = "authentication failed, check the API key"
	case status == http.StatusForbidden:
		hint = "permission denied, check the API key's access to this model"
	case status == http.StatusNotFound:
		hint = "not found, check the base URL and the model name"
	case status == http.StatusTooManyRequests:
		hint = "rate limited"
	case status >= 500:
		hint = "server error"
	default:
		hint = "unexpected response"
	}
	msg := fmt.Sprintf("HTTP %d %s: %s", status, http.StatusText(status), hint)
	if m := trimMessage(red.clean(serverMsg)); m != "" {
		msg += ": " + m
	}
	e.Message = msg
	return e
}

// errorFromStreamEvent classifies an error event received after a 200 response.
func errorFromStreamEvent(provider string, red redactor, typ, serverMsg string, attempts int) *ProviderError {
	e := &ProviderError{Provider: provider, StatusCode: http.StatusOK, Type: typ, Attempts: attempts}
	e.Unavailable = typ != "invalid_request_error"
	e.retryable = e.Unavailable
	msg := "error in the response stream"
	if typ != "" {
		msg += " (" + typ + ")"
	}
	if m := trimMessage(red.clean(serverMsg)); m != "" {
		msg += ": " + m
	}
	e.Message = msg
	return e
}

// errorFromTransport classifies a failure without an error response: no
// connection (before any response) or a stream cut or garbled after a 200.
func errorFromTransport(provider string, red redactor, err error, gotResponse bool, attempts int) *ProviderError {
	e := &ProviderError{Provider: provider, Attempts: attempts, Unavailable: true}
	if gotResponse {
		e.StatusCode = http.StatusOK
		e.retryable = true
		e.Message = "response stream interrupted: " + trimMessage(red.clean(err.Error()))
	} else {
		e.Message = "request failed: " + trimMessage(red.clean(err.Error()))
	}
	return e
}

func trimMessage(s string) string {
	return domain.Clip(strings.Join(strings.Fields(s), " "), maxServerMessage)
}

// parseErrorBody extracts the error type and message from the JSON error bodies
// that OpenAI, Anthropic and the OpenAI-compatible servers send:
//
//	{"error":{"type":"...","message":"..."}}           OpenAI, Anthropic, Ollama, llama.cpp
//	{"type":"error","error":{"type":"...","message":"..."}}  Anthropic
//	{"object":"error","message":"...","type":"..."}    vLLM
//	{"error":"..."}                                    Ollama's native errors
//	{"detail":"..."}                                   FastAPI-based servers
//
// Anything else is returned as the (trimmed) raw text.
func parseErrorBody(body []byte) (typ, msg string) {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) != nil {
		return "", strings.TrimSpace(string(body))
	}
	if len(v.Error) > 0 {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(v.Error, &inner) == nil && (inner.Message != "" || inner.Type != "") {
			return inner.Type, inner.Message
		}
		var s string
		if json.Unmarshal(v.Error, &s) == nil {
			return v.Type, s
		}
	}
	if v.Message != "" {
		return v.Type, v.Message
	}
	if len(v.Detail) > 0 {
		var s string
		if json.Unmarshal(v.Detail, &s) == nil {
			return "", s
		}
		return "", string(v.Detail)
	}
	return "", strings.TrimSpace(string(body))
}
