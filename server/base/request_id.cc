#include "server/base/request_id.h"

#include <unistd.h>

#include <array>
#include <bit>
#include <chrono>
#include <cstring>
#include <random>

namespace seqd {

namespace {

constexpr char kHex[] = "0123456789abcdef";
constexpr uint64_t kBlock = 1024;  // counter values a thread takes at once

// The characters of an acceptable X-Request-Id: [A-Za-z0-9._:-].
constexpr std::array<bool, 256> kIdChars = [] {
  std::array<bool, 256> table{};
  for (int c = 0; c < 256; ++c) {
    table[c] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == ':' || c == '-';
  }
  return table;
}();

bool IsLowerHex(std::string_view s) {
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

bool AllZeros(std::string_view s) { return s.find_first_not_of('0') == std::string_view::npos; }

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// 64 random bits; if the system has no random device, a mix of the clock,
// the process id and an address (still distinct across restarts).
uint64_t RandomPrefix() {
  try {
    std::random_device device;
    return (static_cast<uint64_t>(device()) << 32) ^ device();
  } catch (...) {
    const auto now = std::chrono::high_resolution_clock::now().time_since_epoch().count();
    int local = 0;
    return SplitMix64(static_cast<uint64_t>(now) ^ (static_cast<uint64_t>(::getpid()) << 40) ^
                      reinterpret_cast<uintptr_t>(&local));
  }
}

std::atomic<uint64_t> g_next_serial{1};

}  // namespace

std::optional<RequestId> RequestId::FromHeader(std::string_view text) {
  if (text.empty() || text.size() > kMaxSize) return std::nullopt;
  bool ok = true;
  for (char c : text) ok &= kIdChars[static_cast<unsigned char>(c)];
  if (!ok) return std::nullopt;
  RequestId id;
  std::memcpy(id.data_, text.data(), text.size());
  id.size_ = static_cast<uint8_t>(text.size());
  return id;
}

std::optional<TraceId> TraceId::FromTraceparent(std::string_view h) {
  constexpr size_t kSize = 55;  // 2 + 1 + 32 + 1 + 16 + 1 + 2
  if (h.size() < kSize) return std::nullopt;
  const std::string_view version = h.substr(0, 2), trace = h.substr(3, 32),
                         parent = h.substr(36, 16), flags = h.substr(53, 2);
  if (h[2] != '-' || h[35] != '-' || h[52] != '-') return std::nullopt;
  if (!IsLowerHex(version) || !IsLowerHex(trace) || !IsLowerHex(parent) || !IsLowerHex(flags)) {
    return std::nullopt;
  }
  if (version == "ff" || AllZeros(trace) || AllZeros(parent)) return std::nullopt;
  // Version 00 is exactly 55 characters; a later one may add fields.
  if (h.size() > kSize && (version == "00" || h[kSize] != '-')) return std::nullopt;
  TraceId id;
  std::memcpy(id.hex_, trace.data(), trace.size());
  id.set_ = true;
  return id;
}

RequestIdGenerator::RequestIdGenerator() : RequestIdGenerator(RandomPrefix()) {}

RequestIdGenerator::RequestIdGenerator(uint64_t prefix)
    : serial_(g_next_serial.fetch_add(1, std::memory_order_relaxed)) {
  for (int i = 15; i >= 0; --i, prefix >>= 4) prefix_[i] = kHex[prefix & 0xf];
}

RequestId RequestIdGenerator::Next() {
  struct Cache {
    uint64_t serial = 0;  // of the generator the block is from
    uint64_t next = 0, end = 0;
  };
  thread_local Cache cache;
  if (cache.serial != serial_ || cache.next == cache.end) {
    cache.serial = serial_;
    cache.next = next_block_.fetch_add(kBlock, std::memory_order_relaxed);
    cache.end = cache.next + kBlock;
  }
  uint64_t n = cache.next++;
  RequestId id;
  std::memcpy(id.data_, prefix_, sizeof prefix_);
  id.data_[sizeof prefix_] = '-';
  const int digits = n == 0 ? 1 : (std::bit_width(n) + 3) / 4;
  char* out = id.data_ + sizeof prefix_ + 1;
  for (int i = digits - 1; i >= 0; --i, n >>= 4) out[i] = kHex[n & 0xf];
  id.size_ = static_cast<uint8_t>(sizeof prefix_ + 1 + digits);
  return id;
}

RequestIdGenerator& RequestIdGenerator::Process() {
  static RequestIdGenerator generator;
  return generator;
}

}  // namespace seqd
