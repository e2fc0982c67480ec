// MysqlStore::ParseUrl: a mysql:// URL read into MysqlOptions (user and
// password, the host list, the database, the query's timeouts and TLS
// parameters). Errors name what is wrong and never echo the password.
// DescribeMysql: the options as such a URL without the password.
#include <algorithm>
#include <cctype>
#include <charconv>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/percent_decode.h"
#include "storage/mysql/mysql_store.h"

namespace seqd {
namespace {

// Percent-decodes `in` into `out`; false on a malformed escape.
bool DecodeInto(std::string_view in, std::string* out) {
  std::optional<std::string> decoded = PercentDecode(in, /*plus_is_space=*/false);
  if (!decoded) return false;
  *out = std::move(*decoded);
  return true;
}

Error BadUrl(const std::string& what) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "bad MySQL URL (expected mysql://user:pass@host:port/db): " + what);
}

// One "name=value" of the URL's query: connect_timeout and rw_timeout in
// seconds (1..3600), retry_budget_ms (0..600000), lock_wait_timeout and
// idle_txn_timeout in seconds (0: the server's default / none),
// wsrep_sync_wait (0..15, Galera only).
Status ApplyParam(std::string_view name, std::string_view value, MysqlOptions* o) {
  struct Param {
    std::string_view name;
    int MysqlOptions::*field;
    int min, max;
  };
  static constexpr Param kParams[] = {
      {"connect_timeout", &MysqlOptions::connect_timeout_s, 1, 3600},
      {"rw_timeout", &MysqlOptions::rw_timeout_s, 1, 3600},
      {"retry_budget_ms", &MysqlOptions::retry_budget_ms, 0, 600000},
      {"lock_wait_timeout", &MysqlOptions::lock_wait_timeout_s, 0, 3600},
      {"idle_txn_timeout", &MysqlOptions::idle_txn_timeout_s, 0, 3600},
      {"wsrep_sync_wait", &MysqlOptions::wsrep_sync_wait, 0, 15},
  };
  for (const Param& p : kParams) {
    if (p.name != name) continue;
    int v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || v < p.min || v > p.max) {
      return BadUrl(std::string(name) + " must be a number in " + std::to_string(p.min) + ".." +
                    std::to_string(p.max) + ", got '" + std::string(value) + "'");
    }
    o->*p.field = v;
    return OkStatus();
  }
  return BadUrl("unknown parameter '" + std::string(name) +
                "' (known: connect_timeout, rw_timeout, retry_budget_ms, lock_wait_timeout, "
                "idle_txn_timeout, wsrep_sync_wait, ssl-mode, ssl-ca, ssl-cert, ssl-key)");
}

// One TLS parameter: ssl-mode (DISABLED, PREFERRED, REQUIRED, VERIFY_CA,
// VERIFY_IDENTITY, any case), ssl-ca, ssl-cert, ssl-key (file paths,
// %-escaped). Returns false if `name` is not one.
bool ApplySslParam(std::string_view name, std::string_view value, MysqlOptions* o, Status* st) {
  using Ssl = MysqlOptions::SslMode;
  if (name == "ssl-mode") {
    static constexpr std::pair<std::string_view, Ssl> kModes[] = {
        {"DISABLED", Ssl::kDisabled},
        {"PREFERRED", Ssl::kPreferred},
        {"REQUIRED", Ssl::kRequired},
        {"VERIFY_CA", Ssl::kVerifyCa},
        {"VERIFY_IDENTITY", Ssl::kVerifyIdentity}};
    std::string upper(value);
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const auto& [text, mode] : kModes) {
      if (upper == text) {
        o->ssl_mode = mode;
        return true;
      }
    }
    *st = BadUrl(
        "ssl-mode must be DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY, "
        "got '" +
        std::string(value) + "'");
    return true;
  }
  std::string* field = name == "ssl-ca"     ? &o->ssl_ca
                       : name == "ssl-cert" ? &o->ssl_cert
                       : name == "ssl-key"  ? &o->ssl_key
                                            : nullptr;
  if (!field) return false;
  if (!DecodeInto(value, field)) {
    *st = BadUrl("malformed %-escape in " + std::string(name));
  } else if (field->empty()) {
    *st = BadUrl(std::string(name) + " needs a file path");
  }
  return true;
}

// The TLS parameters together: a verifying mode needs ssl-ca, a client
// certificate needs its key (and the other way round), and DISABLED takes
// no files.
Status CheckSsl(const MysqlOptions& o) {
  using Ssl = MysqlOptions::SslMode;
  if ((o.ssl_mode == Ssl::kVerifyCa || o.ssl_mode == Ssl::kVerifyIdentity) && o.ssl_ca.empty()) {
    return BadUrl("ssl-mode=VERIFY_CA and VERIFY_IDENTITY need ssl-ca (the CA file)");
  }
  if (o.ssl_cert.empty() != o.ssl_key.empty()) {
    return BadUrl("ssl-cert and ssl-key go together (a client certificate and its key)");
  }
  if (o.ssl_mode == Ssl::kDisabled &&
      !(o.ssl_ca.empty() && o.ssl_cert.empty() && o.ssl_key.empty())) {
    return BadUrl("ssl-mode=DISABLED with ssl-ca, ssl-cert or ssl-key");
  }
  return OkStatus();
}

Status ApplyQuery(std::string_view query, MysqlOptions* o) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      return BadUrl("parameter '" + std::string(pair) + "' needs a value");
    }
    Status st = OkStatus();
    if (!ApplySslParam(pair.substr(0, eq), pair.substr(eq + 1), o, &st)) {
      st = ApplyParam(pair.substr(0, eq), pair.substr(eq + 1), o);
    }
    if (!st.ok()) return st;
  }
  return CheckSsl(*o);
}

// One "host[:port]" or "[v6]:port" of the host list; the port defaults to
// 3306. Returns what is wrong, or an empty string.
std::string ParseHost(std::string_view hostport, MysqlHost* out) {
  std::string_view port_text;
  if (!hostport.empty() && hostport.front() == '[') {
    const size_t close = hostport.find(']');
    if (close == std::string_view::npos) return "unterminated '[' in the IPv6 host";
    out->host = std::string(hostport.substr(1, close - 1));
    std::string_view after = hostport.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return "unexpected text after ']' in the host";
      port_text = after.substr(1);
      if (port_text.empty()) return "empty port after ':'";
    }
  } else {
    const size_t pc = hostport.find(':');
    out->host = std::string(hostport.substr(0, pc));
    if (pc != std::string_view::npos) {
      port_text = hostport.substr(pc + 1);
      if (port_text.empty()) return "empty port after ':'";
    }
  }
  if (out->host.empty()) return "empty host";
  for (char c : out->host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '-' || c == '_' || c == ':';
    if (!ok) return "invalid character in host '" + out->host + "'";
  }
  out->port = 3306;
  if (!port_text.empty()) {
    int port = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || port < 1 || port > 65535) {
      return "port must be a number in 1..65535, got '" + std::string(port_text) + "'";
    }
    out->port = port;
  }
  return {};
}

// "h1[:port],h2[:port],...": 1..MysqlOptions::kMaxHosts hosts, none empty,
// none twice.
Status ParseHosts(std::string_view list, std::vector<MysqlHost>* out) {
  out->clear();
  for (;;) {
    const size_t comma = list.find(',');
    if (out->size() == MysqlOptions::kMaxHosts) {
      return BadUrl("more than " + std::to_string(MysqlOptions::kMaxHosts) + " hosts");
    }
    MysqlHost h;
    if (std::string bad = ParseHost(list.substr(0, comma), &h); !bad.empty()) {
      if (comma == std::string_view::npos && out->empty()) return BadUrl(bad);
      return BadUrl("host " + std::to_string(out->size() + 1) + " of the list: " + bad);
    }
    if (std::find(out->begin(), out->end(), h) != out->end()) {
      return BadUrl("host " + std::to_string(out->size() + 1) + " of the list is listed twice");
    }
    out->push_back(std::move(h));
    if (comma == std::string_view::npos) return OkStatus();
    list.remove_prefix(comma + 1);
  }
}

}  // namespace

Result<MysqlOptions> MysqlStore::ParseUrl(std::string_view url) {
  constexpr std::string_view kScheme = "mysql://";
  if (url.size() < kScheme.size() || url.substr(0, kScheme.size()) != kScheme) {
    return BadUrl("must start with mysql://");
  }
  std::string_view rest = url.substr(kScheme.size());

  // The last '@' ends the user info, so an unescaped '@' or '/' in the
  // password is tolerated.
  const size_t at = rest.rfind('@');
  if (at == std::string_view::npos) return BadUrl("missing 'user@' before the host");
  std::string_view userinfo = rest.substr(0, at);
  rest = rest.substr(at + 1);

  MysqlOptions opts;
  const size_t colon = userinfo.find(':');
  std::string_view user = userinfo.substr(0, colon);
  if (user.empty()) return BadUrl("empty user name");
  if (!DecodeInto(user, &opts.user)) return BadUrl("malformed %-escape in the user name");
  if (colon != std::string_view::npos) {
    if (!DecodeInto(userinfo.substr(colon + 1), &opts.password)) {
      return BadUrl("malformed %-escape in the password");
    }
  }

  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos) return BadUrl("missing '/database' after the host");
  std::string_view hostport = rest.substr(0, slash);
  std::string_view db = rest.substr(slash + 1);

  if (Status st = ParseHosts(hostport, &opts.hosts); !st.ok()) return st.error();

  if (const size_t q = db.find('?'); q != std::string_view::npos) {
    std::string_view query = db.substr(q + 1);
    db = db.substr(0, q);
    if (Status st = ApplyQuery(query, &opts); !st.ok()) return st.error();
  }
  if (!DecodeInto(db, &opts.database)) return BadUrl("malformed %-escape in the database");
  if (opts.database.empty()) return BadUrl("empty database name");
  // Checked after decoding: "%2f" must not smuggle a '/' (or a NUL) in.
  if (opts.database.find_first_of(std::string_view("/\0", 2)) != std::string::npos) {
    return BadUrl("'/' or NUL in the database name");
  }
  return opts;
}

std::string HostPort(const MysqlHost& h) {
  const bool v6 = h.host.find(':') != std::string::npos;
  return (v6 ? "[" + h.host + "]" : h.host) + ":" + std::to_string(h.port);
}

std::string DescribeMysql(const MysqlOptions& o) {
  std::string hosts;
  for (const MysqlHost& h : o.hosts) {
    if (!hosts.empty()) hosts += ',';
    hosts += HostPort(h);
  }
  return o.user + "@" + hosts + "/" + o.database;
}

}  // namespace seqd
