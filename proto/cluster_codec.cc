#include "proto/cluster_codec.h"

namespace seqd::proto {
namespace {

void Put16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

void Put32(std::string& out, uint32_t v) {
  Put16(out, static_cast<uint16_t>(v >> 16));
  Put16(out, static_cast<uint16_t>(v));
}

void PutStr(std::string& out, std::string_view s) {
  Put16(out, static_cast<uint16_t>(s.size()));
  out.append(s);
}

// Reads big-endian fields off the front of a view; any short read fails
// every later one.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && in_.empty(); }
  uint32_t U(size_t n) {
    if (!ok_ || in_.size() < n) return Fail();
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<unsigned char>(in_[i]);
    in_.remove_prefix(n);
    return v;
  }
  std::string Str() {
    const size_t n = U(2);
    if (!ok_ || in_.size() < n) return Fail(), std::string();
    std::string s(in_.substr(0, n));
    in_.remove_prefix(n);
    return s;
  }

 private:
  uint32_t Fail() {
    ok_ = false;
    return 0;
  }
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace

void AppendOkClusterMap(std::string& out, uint32_t request_id, const ClusterMapWire& map) {
  std::string payload;
  payload.reserve(16 + map.members.size() * 64 + map.owners.size() * 2);
  Put16(payload, 0);  // status OK
  Put32(payload, map.shards);
  Put16(payload, static_cast<uint16_t>(map.members.size()));
  for (const auto& m : map.members) {
    PutStr(payload, m.instance);
    PutStr(payload, m.advertise);
    payload.push_back(m.live ? 1 : 0);
  }
  Put32(payload, static_cast<uint32_t>(map.owners.size()));
  for (uint16_t o : map.owners) Put16(payload, o);
  AppendFrame(out, kOpClusterMap, kFlagResponse, request_id, payload);
}

std::optional<ClusterMapWire> ParseClusterMapResult(std::string_view result) {
  Reader r(result);
  ClusterMapWire map;
  map.shards = r.U(4);
  const size_t n = r.U(2);
  if (!r.ok() || n >= kNoOwner) return std::nullopt;
  for (size_t i = 0; i < n && r.ok(); ++i) {
    ClusterMapWire::Member m;
    m.instance = r.Str();
    m.advertise = r.Str();
    const uint32_t live = r.U(1);
    if (live > 1) return std::nullopt;
    m.live = live == 1;
    map.members.push_back(std::move(m));
  }
  const size_t count = r.U(4);
  if (!r.ok() || (count != 0 && count != map.shards)) return std::nullopt;
  for (size_t i = 0; i < count && r.ok(); ++i) {
    const uint16_t o = static_cast<uint16_t>(r.U(2));
    if (o != kNoOwner && o >= n) return std::nullopt;
    map.owners.push_back(o);
  }
  if (!r.done()) return std::nullopt;
  return map;
}

}  // namespace seqd::proto
