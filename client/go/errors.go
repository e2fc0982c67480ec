package seqd

import (
	"context"
	"errors"
	"fmt"
)

// Code is the status of a failed call: 0-66 are the binary protocol's codes
// (docs/protocol.md, "Error codes"); 100 and above are made by the client
// itself, with the same numbers as the C++ client's StatusCode.
type Code uint16

// The protocol's codes.
const (
	CodeOK                 Code = 0
	CodeInvalidArgument    Code = 1
	CodeUnknownKey         Code = 2
	CodeKeyExists          Code = 3
	CodeStoreUnavailable   Code = 4
	CodeShuttingDown       Code = 5
	CodeInternal           Code = 6
	CodeUnknownOpcode      Code = 7
	CodeNotFound           Code = 8
	CodeFailedPrecondition Code = 9
	CodeTooLarge           Code = 10
	CodeNotServing         Code = 11
	CodeWrongOwner         Code = 12
	CodeUnauthenticated    Code = 13
	CodePermissionDenied   Code = 14
	CodeResourceExhausted  Code = 15
	CodeMalformedFrame     Code = 64
	CodeUnsupportedVersion Code = 65
	CodeFrameTooLarge      Code = 66
)

// The client's own codes.
const (
	// CodeTimeout: no answer within the call's limit (its context's
	// deadline, or Options.RetryBudget), or within Options.CallTimeout on
	// the last attempt Options.MaxAttempts allows.
	CodeTimeout Code = 100
	// CodeUnavailable: no endpoint reachable, or the connection was lost.
	CodeUnavailable Code = 101
	// CodeProtocol: the server sent something that is not the protocol.
	CodeProtocol Code = 102
	// CodeCancelled: the context was cancelled, or the client closed.
	CodeCancelled Code = 103
)

var codeNames = map[Code]string{
	CodeOK: "OK", CodeInvalidArgument: "INVALID_ARGUMENT", CodeUnknownKey: "UNKNOWN_KEY",
	CodeKeyExists: "KEY_EXISTS", CodeStoreUnavailable: "STORE_UNAVAILABLE",
	CodeShuttingDown: "SHUTTING_DOWN", CodeInternal: "INTERNAL", CodeUnknownOpcode: "UNKNOWN_OPCODE",
	CodeNotFound: "NOT_FOUND", CodeFailedPrecondition: "FAILED_PRECONDITION",
	CodeTooLarge: "TOO_LARGE", CodeNotServing: "NOT_SERVING", CodeWrongOwner: "WRONG_OWNER",
	CodeUnauthenticated: "UNAUTHENTICATED", CodePermissionDenied: "PERMISSION_DENIED",
	CodeResourceExhausted: "RESOURCE_EXHAUSTED", CodeMalformedFrame: "MALFORMED_FRAME",
	CodeUnsupportedVersion: "UNSUPPORTED_VERSION", CodeFrameTooLarge: "FRAME_TOO_LARGE",
	CodeTimeout: "TIMEOUT", CodeUnavailable: "UNAVAILABLE", CodeProtocol: "PROTOCOL",
	CodeCancelled: "CANCELLED",
}

// String is the code's name as docs/protocol.md spells it ("UNKNOWN_KEY"),
// or "CODE_<n>" for a code this client does not know.
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("CODE_%d", uint16(c))
}

// Retryable reports whether a call that failed with c is tried again (on
// the next endpoint, after a backoff), as the C++ client does: TIMEOUT,
// UNAVAILABLE, STORE_UNAVAILABLE, SHUTTING_DOWN and NOT_SERVING. Every
// other code is about the request itself and is returned at once.
func (c Code) Retryable() bool {
	switch c {
	case CodeTimeout, CodeUnavailable, CodeStoreUnavailable, CodeShuttingDown, CodeNotServing:
		return true
	}
	return false
}

// Error is every error a Client call returns (as *Error).
//
// errors.Is matches on the code: errors.Is(err, seqd.ErrUnknownKey) is true
// for any *Error whose Code is CodeUnknownKey, whatever its message. A
// CANCELLED error also matches context.Canceled, and a TIMEOUT error
// context.DeadlineExceeded. Use errors.As(err, &e) (e *seqd.Error) for the
// code and the server's message.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return "seqd: " + e.Code.String()
	}
	return "seqd: " + e.Code.String() + ": " + e.Message
}

// Is makes errors.Is compare codes (see Error).
func (e *Error) Is(target error) bool {
	switch t := target.(type) {
	case *Error:
		return t.Code == e.Code
	}
	switch target {
	case context.Canceled:
		return e.Code == CodeCancelled
	case context.DeadlineExceeded:
		return e.Code == CodeTimeout
	}
	return false
}

// Sentinels for errors.Is, one per code.
var (
	ErrInvalidArgument    = &Error{Code: CodeInvalidArgument}
	ErrUnknownKey         = &Error{Code: CodeUnknownKey}
	ErrKeyExists          = &Error{Code: CodeKeyExists}
	ErrStoreUnavailable   = &Error{Code: CodeStoreUnavailable}
	ErrShuttingDown       = &Error{Code: CodeShuttingDown}
	ErrInternal           = &Error{Code: CodeInternal}
	ErrUnknownOpcode      = &Error{Code: CodeUnknownOpcode}
	ErrNotFound           = &Error{Code: CodeNotFound}
	ErrFailedPrecondition = &Error{Code: CodeFailedPrecondition}
	ErrTooLarge           = &Error{Code: CodeTooLarge}
	ErrNotServing         = &Error{Code: CodeNotServing}
	ErrWrongOwner         = &Error{Code: CodeWrongOwner}
	ErrUnauthenticated    = &Error{Code: CodeUnauthenticated}
	ErrPermissionDenied   = &Error{Code: CodePermissionDenied}
	ErrResourceExhausted  = &Error{Code: CodeResourceExhausted}
	ErrMalformedFrame     = &Error{Code: CodeMalformedFrame}
	ErrUnsupportedVersion = &Error{Code: CodeUnsupportedVersion}
	ErrFrameTooLarge      = &Error{Code: CodeFrameTooLarge}
	ErrTimeout            = &Error{Code: CodeTimeout}
	ErrUnavailable        = &Error{Code: CodeUnavailable}
	ErrProtocol           = &Error{Code: CodeProtocol}
	ErrCancelled          = &Error{Code: CodeCancelled}
)

// CodeOf is err's code: CodeOK for nil, the Code of an *Error (wrapped or
// not), CodeCancelled / CodeTimeout for the context's errors, else
// CodeUnavailable.
func CodeOf(err error) Code {
	if err == nil {
		return CodeOK
	}
	var e *Error
	if asError(err, &e) {
		return e.Code
	}
	switch {
	case isErr(err, context.Canceled):
		return CodeCancelled
	case isErr(err, context.DeadlineExceeded):
		return CodeTimeout
	}
	return CodeUnavailable
}

func errorf(code Code, format string, args ...interface{}) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ctxError turns a done context's error into CANCELLED or TIMEOUT.
func ctxError(ctx context.Context, what string) *Error {
	if ctx.Err() == context.DeadlineExceeded {
		return errorf(CodeTimeout, "%s: deadline exceeded", what)
	}
	return errorf(CodeCancelled, "%s: cancelled", what)
}

func asError(err error, target **Error) bool { return errors.As(err, target) }
func isErr(err, target error) bool           { return errors.Is(err, target) }
