#include "common/scopes.h"

#include <array>
#include <utility>

namespace seqd {
namespace {

struct PermissionRow {
  Permission permission;
  std::string_view name;
  bool keyed;
};

constexpr std::array<PermissionRow, 8> kPermissions = {{
    {Permission::kAdmin, "admin", false},
    {Permission::kIds, "ids", true},
    {Permission::kSnowflake, "snowflake", false},
    {Permission::kMsgSend, "msg:send", true},
    {Permission::kMsgRead, "msg:read", true},
    {Permission::kMsgAdmin, "msg:admin", true},
    {Permission::kMetrics, "metrics", false},
    {Permission::kCluster, "cluster", false},
}};

constexpr size_t kMaxPrefix = 255;  // a key's longest (server/core/key_rules.h)

}  // namespace

bool ValidTokenId(std::string_view id) {
  if (id.empty() || id.size() > 64) return false;
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string_view PermissionName(Permission p) {
  for (const PermissionRow& row : kPermissions) {
    if (row.permission == p) return row.name;
  }
  return "unknown";
}

Result<Scope> ParseScope(std::string_view text) {
  for (const PermissionRow& row : kPermissions) {
    if (!row.keyed) {
      if (text == row.name) return Scope{row.permission, "", true};
      continue;
    }
    if (text.size() <= row.name.size() || text.substr(0, row.name.size()) != row.name ||
        text[row.name.size()] != ':') {
      continue;
    }
    std::string_view prefix = text.substr(row.name.size() + 1);
    if (prefix.empty()) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "scope " + std::string(text) + " needs a key prefix, or * for every key");
    }
    if (prefix == "*") return Scope{row.permission, "", true};
    if (prefix.size() > kMaxPrefix) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "scope prefix longer than " + std::to_string(kMaxPrefix) + " bytes");
    }
    for (char ch : prefix) {
      const auto c = static_cast<unsigned char>(ch);  // UTF-8's bytes are above 0x7f
      if (c <= ' ' || c == ',' || c == '*' || c == 0x7f) {
        return MakeError(ErrorCode::kInvalidArgument,
                         "scope " + std::string(text) +
                             ": a prefix is plain key characters (a lone * means every key)");
      }
    }
    return Scope{row.permission, std::string(prefix), false};
  }
  return MakeError(ErrorCode::kInvalidArgument,
                   "unknown scope \"" + std::string(text.substr(0, 64)) +
                       "\" (admin, ids:P, snowflake, msg:send:P, msg:read:P, msg:admin:P, metrics, "
                       "cluster; P a key prefix or *)");
}

Result<std::vector<Scope>> ParseScopes(std::string_view text) {
  std::vector<Scope> out;
  while (true) {
    const size_t comma = text.find(',');
    auto scope = ParseScope(text.substr(0, comma));
    if (!scope) return scope.error();
    out.push_back(std::move(scope).value());
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  return out;
}

bool Allows(const std::vector<Scope>& scopes, Permission p, std::string_view key) {
  for (const Scope& s : scopes) {
    if (s.permission == Permission::kCluster &&
        (p == Permission::kIds || p == Permission::kMsgSend || p == Permission::kMsgRead)) {
      return true;  // a peer forwarding for clients it has already checked
    }
    if (s.permission != p) continue;
    if (s.all_keys) return true;
    if (!key.empty() && key.substr(0, s.prefix.size()) == s.prefix) return true;
  }
  return false;
}

}  // namespace seqd
