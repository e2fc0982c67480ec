// UTF-8 well-formedness (RFC 3629, the Unicode standard's Table 3-7): the
// one reading of it shared by the key rules and the log formatter.
//
// Thread safety: pure functions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace seqd {

// The length (2..4) of the well-formed UTF-8 sequence that starts with the
// non-ASCII byte s[i], or 0 if it is ill-formed (an overlong form, a
// surrogate, a code point above U+10FFFF, a stray continuation byte, or a
// sequence cut short); then `bad` is the length of its maximal well-formed
// prefix (at least 1), which one U+FFFD replaces.
// Precondition: i < s.size() and s[i] is not ASCII.
size_t Utf8SequenceLength(std::string_view s, size_t i, size_t& bad);

// The code point of the well-formed sequence of `length` bytes at s[i]
// (as Utf8SequenceLength measured it).
uint32_t Utf8CodePoint(std::string_view s, size_t i, size_t length);

// What is wrong with `text` as an identifier's characters, or kOk: it must
// be well-formed UTF-8 with no control character (Unicode's Cc: U+0000 to
// U+001F, U+007F to U+009F).
enum class TextFault { kOk, kNotUtf8, kControl };
TextFault CheckIdentifierText(std::string_view text);

}  // namespace seqd
