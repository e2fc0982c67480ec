// The tokens the fuzz targets' servers with authentication know, and the
// Authenticator that loads them (from a file written once per process and
// removed right after: the targets never reload), without a failure budget.
//
// Thread safety: LoadFuzzTokens() may be called from any thread.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include "common/token_digest.h"
#include "server/auth/authenticator.h"
#include "tests/fuzz/fuzz_targets.h"

namespace seqd::fuzz {

// admin (with metrics), a narrow one (ids:fuzz, snowflake, msg:send:c,
// msg:read:c, msg:admin:c1) and a cluster peer's.
inline constexpr std::string_view kAdminSecret = "fuzz-admin-secret";
inline constexpr std::string_view kNarrowSecret = "fuzz-narrow-secret";
inline constexpr std::string_view kClusterSecret = "fuzz-cluster-secret";

inline std::unique_ptr<Authenticator> LoadFuzzTokens() {
  char name[] = "/tmp/seqd-fuzz-tokens.XXXXXX";
  const int fd = ::mkstemp(name);
  FUZZ_CHECK(fd >= 0);
  ::close(fd);
  {
    std::ofstream out(name);
    out << "admin " << DigestHex(Sha256(kAdminSecret)) << " admin,metrics\n"
        << "narrow " << DigestHex(Sha256(kNarrowSecret))
        << " ids:fuzz,snowflake,msg:send:c,msg:read:c,msg:admin:c1\n"
        << "peer " << DigestHex(Sha256(kClusterSecret)) << " cluster\n";
  }
  auto auth = Authenticator::FromFile(name);
  std::remove(name);
  FUZZ_CHECK(auth.ok());
  // No failure budget: a block would carry over from one input to the next
  // and make a finding depend on what ran before it.
  AuthFailureOptions no_budget;
  no_budget.budget = 0;
  (*auth)->failures().Configure(no_budget);
  return std::move(auth).value();
}

}  // namespace seqd::fuzz
