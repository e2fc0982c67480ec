#include "common/utf8.h"

namespace seqd {

size_t Utf8SequenceLength(std::string_view s, size_t i, size_t& bad) {
  const auto c = static_cast<unsigned char>(s[i]);
  size_t need = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    need = 1;
  } else if (c == 0xE0) {
    need = 2;
    lo = 0xA0;  // no overlong forms
  } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF) {
    need = 2;
  } else if (c == 0xED) {
    need = 2;
    hi = 0x9F;  // no surrogates
  } else if (c == 0xF0) {
    need = 3;
    lo = 0x90;  // no overlong forms
  } else if (c >= 0xF1 && c <= 0xF3) {
    need = 3;
  } else if (c == 0xF4) {
    need = 3;
    hi = 0x8F;  // nothing above U+10FFFF
  } else {
    bad = 1;
    return 0;
  }
  for (size_t k = 1; k <= need; ++k) {
    const auto d = i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
    if (d < (k == 1 ? lo : 0x80) || d > (k == 1 ? hi : 0xBF)) {
      bad = k;
      return 0;
    }
  }
  return need + 1;
}

uint32_t Utf8CodePoint(std::string_view s, size_t i, size_t length) {
  static constexpr unsigned char kLeadMask[] = {0, 0x7F, 0x1F, 0x0F, 0x07};
  uint32_t cp = static_cast<unsigned char>(s[i]) & kLeadMask[length];
  for (size_t k = 1; k < length; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

TextFault CheckIdentifierText(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c < 0x80) {
      if (c < 0x20 || c == 0x7F) return TextFault::kControl;
      ++i;
      continue;
    }
    size_t bad = 0;
    const size_t length = Utf8SequenceLength(text, i, bad);
    if (length == 0) return TextFault::kNotUtf8;
    const uint32_t cp = Utf8CodePoint(text, i, length);
    if (cp >= 0x80 && cp <= 0x9F) return TextFault::kControl;
    i += length;
  }
  return TextFault::kOk;
}

}  // namespace seqd
