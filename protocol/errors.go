package protocol

import (
	"fmt"
	"time"
)

// Code is a machine-readable error code carried by an error frame.
type Code string

// The error codes of the protocol.
const (
	CodeBadFrame     Code = "bad_frame"    // not JSON, no/unknown type, wrong field types
	CodeUnauthorized Code = "unauthorized" // no valid hello/token
	CodeForbidden    Code = "forbidden"    // not a member, or acting for someone else
	CodeNotFound     Code = "not_found"    // the thing named does not exist
	CodeInvalid      Code = "invalid"      // a field fails validation
	CodeTooLarge     Code = "too_large"    // a body or list exceeds its limit
	CodeRateLimited  Code = "rate_limited" // too many frames in too short a time
	CodeInternal     Code = "internal"     // the server failed; the request changed nothing
)

// Error is a protocol-level failure: a code and a plain-words message. It is
// what a request that fails is answered with.
type Error struct {
	Code    Code
	Message string
	// RetryAfterMS is set on a rate_limited error: the wait, in ms, before
	// the request can succeed.
	RetryAfterMS int64
}

// Error implements the error interface.
func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// Errorf builds an *Error with a formatted message.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Frame turns the error into the error frame answering request id.
func (e *Error) Frame(id string) *ErrorFrame {
	return &ErrorFrame{Ref: Ref{ID: id}, Code: e.Code, Message: e.Message, RetryAfterMS: e.RetryAfterMS}
}

// RateLimited is a rate_limited error that says how long to wait.
func RateLimited(retryAfter time.Duration, format string, args ...any) *Error {
	e := Errorf(CodeRateLimited, format, args...)
	e.RetryAfterMS = max(1, retryAfter.Milliseconds())
	return e
}
