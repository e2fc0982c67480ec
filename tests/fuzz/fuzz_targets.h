// Fuzz target bodies, shared by the libFuzzer binaries (tests/fuzz/*_main.cc,
// built with clang by scripts/fuzz) and by the unit test that replays the
// committed corpus and every past crash (tests/unit/fuzz_replay_test.cc).
//
// Each returns normally on any input; a bug shows as a crash, a sanitizer
// report or a failed internal check (abort).
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace seqd::fuzz {

// Where FUZZ_CHECK reports: a copy of stderr taken before libFuzzer starts,
// so the report survives -close_fd_mask=2 (scripts/fuzz closes the targets'
// stderr: the servers' audit lines would fill the log).
inline const int kReportFd = ::dup(2);

}  // namespace seqd::fuzz

// Aborts (libFuzzer reports a crash) when an invariant does not hold, naming it.
#define FUZZ_CHECK(cond)                                                                       \
  do {                                                                                         \
    if (!(cond)) {                                                                             \
      ::dprintf(::seqd::fuzz::kReportFd, "%s:%d: fuzz check failed: %s\n", __FILE__, __LINE__, \
                #cond);                                                                        \
      std::abort();                                                                            \
    }                                                                                          \
  } while (0)

namespace seqd::fuzz {

// The binary protocol decoder and payload parsers, over every split.
void BinaryDecoder(const uint8_t* data, size_t size);
// The RESP2 command parser.
void RespDecoder(const uint8_t* data, size_t size);
// A whole binary-protocol session (decode, handle with a real allocator,
// snowflake generator and message service over memory stores, encode) fed
// from an in-memory byte stream; message ops and pushes included.
void BinarySession(const uint8_t* data, size_t size);
// Raw bytes through Beast's request parser (HttpServer's limits) and
// ApiRouter over memory stores; every response well formed, exactly one per
// request.
void HttpRequest(const uint8_t* data, size_t size);
// A JSON body (data[1..]) through ApiRouter to the route and token the first
// byte picks: the routes that parse bodies.
void HttpJson(const uint8_t* data, size_t size);
// A whole RESP session (parser, DecideRespCommand, INCR runs, replies) on a
// loopback connection to a real RespServer.
void RespSession(const uint8_t* data, size_t size);
// LoadConfig: a config file, then (after NULs) flags and environment.
void ConfigFile(const uint8_t* data, size_t size);
// ParseStoreSpec and the MySQL URL parser; no password in any error.
void StoreUrl(const uint8_t* data, size_t size);
// ParseTokens over the input, ParseScopes over each line.
void Tokens(const uint8_t* data, size_t size);

}  // namespace seqd::fuzz
