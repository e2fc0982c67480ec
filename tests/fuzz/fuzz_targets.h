// Fuzz target bodies, shared by the libFuzzer binaries (tests/fuzz/*_main.cc,
// built with clang by scripts/fuzz) and by the unit test that replays the
// committed corpus and every past crash (tests/unit/fuzz_replay_test.cc).
//
// Each returns normally on any input; a bug shows as a crash, a sanitizer
// report or a failed internal check (abort).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

// Aborts (libFuzzer reports a crash) when an invariant does not hold, naming it.
#define FUZZ_CHECK(cond)                                                                 \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      std::fprintf(stderr, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                      \
    }                                                                                    \
  } while (0)

namespace seqd::fuzz {

// The binary protocol decoder and payload parsers, over every split.
void BinaryDecoder(const uint8_t* data, size_t size);
// The RESP2 command parser.
void RespDecoder(const uint8_t* data, size_t size);
// A whole binary-protocol session (decode, handle with a real allocator over
// a memory store, encode) fed from an in-memory byte stream.
void BinarySession(const uint8_t* data, size_t size);

}  // namespace seqd::fuzz
