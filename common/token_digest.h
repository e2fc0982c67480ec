// Token secrets: how they are made, hashed and compared. Only the SHA-256
// of a secret is ever stored (tokens file) or kept in memory.
//
// Thread safety: pure functions.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace seqd {

using TokenDigest = std::array<uint8_t, 32>;

TokenDigest Sha256(std::string_view bytes);
// 64 lower-case hex digits.
std::string DigestHex(const TokenDigest& d);
// The digest written as 64 hex digits (either case); nullopt otherwise.
std::optional<TokenDigest> ParseDigestHex(std::string_view hex);
// Equal, in time that does not depend on where they differ.
bool DigestsEqual(const TokenDigest& a, const TokenDigest& b);
// A fresh secret: 32 bytes from the OS's CSPRNG as 43 base64url characters
// (no padding), prefixed "sqd_" so a leaked one is easy to grep for.
std::string NewTokenSecret();

}  // namespace seqd
