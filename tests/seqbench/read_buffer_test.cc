// seqd::tools::ReadBuffer (bench/seqbench/read_buffer.h), where seqbench's
// connections keep what they read: room is added without losing the bytes
// kept, Drop keeps the unparsed tail in order, and clear keeps the room.
#include "read_buffer.h"

#include <doctest/doctest.h>

#include <cstring>
#include <string>

using seqd::tools::ReadBuffer;

namespace {

void Put(ReadBuffer& b, const std::string& s, size_t room) {
  char* at = b.Room(room);
  REQUIRE(s.size() <= room);
  std::memcpy(at, s.data(), s.size());
  b.Filled(s.size());
}

}  // namespace

TEST_CASE("ReadBuffer: reads append, Drop removes parsed bytes from the front") {
  ReadBuffer b;
  CHECK(b.size() == 0);
  Put(b, "hello ", 8);
  Put(b, "world", 64);  // grows: the first bytes stay
  CHECK(b.From(0) == "hello world");
  b.Drop(6);
  CHECK(b.From(0) == "world");
  CHECK(b.From(2) == "rld");
  b.Drop(0);
  CHECK(b.From(0) == "world");
  b.Drop(5);
  CHECK(b.size() == 0);
}

TEST_CASE("ReadBuffer: growing many times keeps every byte in order") {
  ReadBuffer b;
  std::string want;
  for (int i = 0; i < 2000; ++i) {
    const std::string piece = std::to_string(i) + ",";
    Put(b, piece, piece.size());  // room only just enough: grows often
    want += piece;
    if (i % 97 == 0) {  // parse some
      b.Drop(want.size() / 3);
      want.erase(0, want.size() / 3);
    }
  }
  CHECK(b.From(0) == want);
}

TEST_CASE("ReadBuffer: clear keeps the room, so a pending read's pointer stays valid") {
  ReadBuffer b;
  char* room = b.Room(64 * 1024);
  b.clear();
  CHECK(b.Room(64 * 1024) == room);
  std::memcpy(room, "abc", 3);
  b.Filled(3);
  CHECK(b.From(0) == "abc");
}
