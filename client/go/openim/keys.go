package openim

import (
	"strconv"

	seqd "seqd.dev/go"
)

// MaxKeyLen is seqd's longest key, in bytes.
const MaxKeyLen = 128

// CheckKey says why k is not a valid seqd key ("" when it is): 1..128
// bytes of A-Z a-z 0-9 _ - . : @, not starting with the reserved "seqd.".
// The same rules as the server's; checked here so that a bad id costs no
// round trip and gets an error that names the id.
func CheckKey(k string) string {
	switch {
	case k == "":
		return "empty"
	case len(k) > MaxKeyLen:
		return "longer than " + strconv.Itoa(MaxKeyLen) + " bytes"
	case len(k) >= 5 && k[:5] == "seqd.":
		return `starts with the reserved "seqd."`
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' ||
			c == '_' || c == '-' || c == '.' || c == ':' || c == '@'
		if !ok {
			return "byte " + strconv.Itoa(i) + " is not one of A-Z a-z 0-9 _ - . : @"
		}
	}
	return ""
}

// ConversationIDError: a conversation id that cannot be a seqd key. It
// matches errors.Is(err, ErrConversationID) and, through Unwrap, a
// *seqd.Error with CodeInvalidArgument (errors.Is(err,
// seqd.ErrInvalidArgument)). Nothing was sent to seqd.
type ConversationIDError struct {
	ID     string // the conversation id as given
	Reason string
}

func (e *ConversationIDError) Error() string {
	id := e.ID
	if len(id) > 64 {
		id = id[:64] + "…"
	}
	return "openim: conversation id " + strconv.Quote(id) + " is not a valid seqd key: " + e.Reason
}

// Is makes errors.Is(err, ErrConversationID) true.
func (e *ConversationIDError) Is(target error) bool { return target == ErrConversationID }

// Unwrap is the equivalent seqd error (INVALID_ARGUMENT).
func (e *ConversationIDError) Unwrap() error {
	return &seqd.Error{Code: seqd.CodeInvalidArgument, Message: e.Error()}
}
