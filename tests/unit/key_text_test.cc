// The key rules' text (server/core/key_rules.h, common/utf8.h): any
// well-formed UTF-8 of 1..255 bytes with no control character; every way
// UTF-8 can be ill-formed refused; the bounds exactly at their edges.
#include <doctest/doctest.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/key_text.h"
#include "common/utf8.h"
#include "server/core/key_rules.h"

using namespace seqd;

namespace {

std::string MessageOf(std::string_view key) {
  Status s = ValidateKeyText(key);
  return s.ok() ? std::string("ok") : s.error().message;
}

}  // namespace

TEST_CASE("keys: OpenIM's conversation ids whatever their user ids hold") {
  for (std::string_view key :
       {"si_张三_李四", "sg_Équipe Rouge", "g_a/b?c#d%e&f=g+h", "n_😀_🚀", "sn_<b>\"x\"</b>",
        "si_a b ", " leading", "si_\xEF\xBF\xBF", "si_\xF4\x8F\xBF\xBF", "si_\xC2\xA0", "a"}) {
    CAPTURE(key);
    CHECK(MessageOf(key) == "ok");
  }
}

TEST_CASE("keys: length counts bytes, 255 at most") {
  CHECK(MessageOf(std::string(255, 'x')) == "ok");
  CHECK(MessageOf(std::string(256, 'x')) == "key is 256 bytes; the limit is 255");
  std::string accents;
  while (accents.size() + 2 <= 255) accents += "é";  // 127 x 2 bytes
  CHECK(MessageOf(accents) == "ok");
  CHECK(MessageOf(accents + "é") == "key is 256 bytes; the limit is 255");
  CHECK(MessageOf("") == "key is empty");
}

TEST_CASE("keys: control characters are refused, C0, DEL and C1") {
  for (std::string_view key :
       {std::string_view("a\0b", 3), std::string_view("a\tb"), std::string_view("a\nb"),
        std::string_view("a\x1F"), std::string_view("\x7F"), std::string_view("a\xC2\x80"),
        std::string_view("a\xC2\x85"), std::string_view("a\xC2\x9F")}) {
    CAPTURE(key);
    CHECK(MessageOf(key) == "key may not contain control characters");
  }
}

TEST_CASE("keys: ill-formed UTF-8 is refused") {
  for (std::string_view key : {
           "a\xFF",              // never a UTF-8 byte
           "a\x80",              // a continuation byte alone
           "a\xC3",              // cut short
           "a\xE6\x97",          // cut short
           "a\xC0\xAF",          // overlong '/'
           "a\xE0\x80\xAF",      // overlong '/'
           "a\xED\xA0\x80",      // a surrogate (U+D800)
           "a\xF4\x90\x80\x80",  // above U+10FFFF
           "a\xF5\x80\x80\x80",  // never a lead byte
       }) {
    CAPTURE(key);
    CHECK(MessageOf(key) == "key is not valid UTF-8");
  }
}

TEST_CASE("utf8: sequence lengths and code points") {
  size_t bad = 0;
  CHECK(Utf8SequenceLength("\xC3\xA9", 0, bad) == 2);
  CHECK(Utf8CodePoint("\xC3\xA9", 0, 2) == 0xE9);
  CHECK(Utf8SequenceLength("\xE5\xBC\xA0", 0, bad) == 3);
  CHECK(Utf8CodePoint("\xE5\xBC\xA0", 0, 3) == 0x5F20);
  CHECK(Utf8SequenceLength("\xF0\x9F\x98\x80", 0, bad) == 4);
  CHECK(Utf8CodePoint("\xF0\x9F\x98\x80", 0, 4) == 0x1F600);
  CHECK(Utf8SequenceLength("\xE5\xBC", 0, bad) == 0);
  CHECK(bad == 2);
  CHECK(CheckIdentifierText("plain") == TextFault::kOk);
}

TEST_CASE("keys: the plain-key fast path agrees with the full check on every byte") {
  // Every one-byte key, each byte between two plain ones, the length edges
  // and the reserved prefix: a key the fast path calls plain must pass the
  // full check, and one it does not must get the full check's answer.
  std::vector<std::string> keys;
  for (int b = 0; b < 256; ++b) {
    keys.push_back(std::string(1, static_cast<char>(b)));
    std::string between = "a";
    between += static_cast<char>(b);
    between += 'z';
    keys.push_back(between);
  }
  keys.push_back(std::string(255, 'k'));
  keys.push_back(std::string(256, 'k'));
  keys.push_back("");
  keys.push_back("seqd.x");
  keys.push_back("seqd");
  keys.push_back("g_\xE4\xB8\xAD");
  for (const std::string& key : keys) {
    CAPTURE(key);
    const bool full = ValidateOtherClientKey(key).ok();
    if (IsPlainClientKey(key)) CHECK(full);
    CHECK(ValidateClientKey(key).ok() == full);
  }
  CHECK(IsPlainClientKey("k"));
  CHECK(IsPlainClientKey("si_order 7"));
  CHECK_FALSE(IsPlainClientKey("seqd.server_msg_id"));
  CHECK_FALSE(IsPlainClientKey("g_\xE4\xB8\xAD"));  // valid, but not plain
  CHECK(ValidateClientKey("g_\xE4\xB8\xAD").ok());
}
