package openim

import (
	"strconv"
	"unicode/utf8"

	seqd "seqd.dev/go"
)

// MaxKeyLen is seqd's longest key, in bytes.
const MaxKeyLen = 255

// CheckKey says why k is not a valid seqd key ("" when it is): 1..255
// bytes of well-formed UTF-8 with no control character (U+0000..U+001F,
// U+007F..U+009F), not starting with the reserved "seqd.". Keys compare
// byte for byte: "si_A" and "si_a", "g_x" and "g_x " are two keys. The same
// rules as the server's; checked here so that a bad id costs no round trip
// and gets an error that names the id.
func CheckKey(k string) string {
	switch {
	case k == "":
		return "empty"
	case len(k) > MaxKeyLen:
		return "longer than " + strconv.Itoa(MaxKeyLen) + " bytes"
	case len(k) >= 5 && k[:5] == "seqd.":
		return `starts with the reserved "seqd."`
	}
	for i := 0; i < len(k); {
		r, size := utf8.DecodeRuneInString(k[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return "byte " + strconv.Itoa(i) + " is not valid UTF-8"
		case r < 0x20 || (r >= 0x7f && r <= 0x9f):
			return "byte " + strconv.Itoa(i) + " is a control character"
		}
		i += size
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
