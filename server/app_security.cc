#include "server/app_security.h"

#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include <boost/asio/ip/address.hpp>
#include <fstream>
#include <sstream>

namespace seqd {
namespace {

constexpr size_t kMaxClusterTokenBytes = 256;

std::string_view Trim(std::string_view s) {
  while (!s.empty() &&
         (s.front() == ' ' || s.front() == '\t' || s.front() == '\r' || s.front() == '\n')) {
    s.remove_prefix(1);
  }
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n')) {
    s.remove_suffix(1);
  }
  return s;
}

}  // namespace

bool IsLoopbackAddress(std::string_view address) {
  if (address == "localhost") return true;
  if (address.size() >= 2 && address.front() == '[' && address.back() == ']') {
    address = address.substr(1, address.size() - 2);
  }
  boost::system::error_code ec;
  const auto ip = boost::asio::ip::make_address(std::string(address), ec);
  return !ec && ip.is_loopback();
}

Result<std::unique_ptr<Authenticator>> LoadAuthenticator(const Config& c) {
  if (c.tokens_file.empty()) return std::make_unique<Authenticator>();
  auto auth = Authenticator::FromFile(c.tokens_file);
  if (!auth) return auth;
  AuthFailureOptions budget;
  budget.budget = static_cast<int>(c.auth_failure_budget);
  (*auth)->failures().Configure(budget);
  return auth;
}

void CountAuthFailures(const Authenticator& auth, prometheus::Registry& registry) {
  prometheus::Counter& failures = prometheus::BuildCounter()
                                      .Name("seqd_auth_failures_total")
                                      .Help("Authentications with a secret that matches no token")
                                      .Register(registry)
                                      .Add({});
  auto& throttled = prometheus::BuildCounter()
                        .Name("seqd_auth_throttled_total")
                        .Help(
                            "Authentications refused because the address gave too many wrong "
                            "secrets")
                        .Register(registry);
  prometheus::Counter* http = &throttled.Add({{"interface", "http"}});
  prometheus::Counter* binary = &throttled.Add({{"interface", "binary"}});
  prometheus::Counter* resp = &throttled.Add({{"interface", "resp"}});
  AuthFailures::Hooks hooks;
  hooks.failure = [&failures] { failures.Increment(); };
  hooks.throttled = [http, binary, resp](std::string_view interface) {
    (interface == "binary" ? binary : interface == "resp" ? resp : http)->Increment();
  };
  auth.failures().SetHooks(std::move(hooks));
}

Status CheckExposure(const Config& c, bool tokens_enabled) {
  if (tokens_enabled || c.insecure_no_auth) return OkStatus();
  struct Listener {
    const char* name;
    const std::string& address;
    bool enabled;
  };
  const Listener listeners[] = {
      {"http_address", c.http_address, true},
      {"admin_address", c.admin_address, c.admin_port >= 0},
      {"tcp_address", c.tcp_address, c.tcp_port >= 0 || c.resp_port >= 0},
  };
  for (const Listener& l : listeners) {
    if (!l.enabled || IsLoopbackAddress(l.address)) continue;
    return MakeError(ErrorCode::kInvalidArgument,
                     std::string(l.name) + " '" + l.address +
                         "' is not a loopback address and no tokens file is set: anyone who "
                         "can reach it could do everything. Give --tokens-file "
                         "(docs/security.md), bind 127.0.0.1, or pass --insecure-no-auth");
  }
  return OkStatus();
}

Result<TlsListeners> ParseTlsListeners(const Config& c) {
  TlsListeners out;
  std::string_view rest = c.tls_listeners;
  while (!rest.empty()) {
    const size_t comma = rest.find(',');
    const std::string_view name = Trim(rest.substr(0, comma));
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (name == "http") {
      out.http = true;
    } else if (name == "admin") {
      out.admin = true;
    } else if (name == "binary") {
      out.binary = true;
    } else if (name == "resp") {
      out.resp = true;
    } else if (!name.empty()) {
      return MakeError(ErrorCode::kInvalidArgument, "tls_listeners: unknown listener '" +
                                                        std::string(name) +
                                                        "' (http, admin, binary, resp)");
    }
  }
  return out;
}

Result<std::string> ReadClusterToken(const Config& c, bool tokens_enabled) {
  if (!c.cluster || !tokens_enabled) return std::string();
  if (c.cluster_token_file.empty()) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cluster mode with tokens needs --cluster-token-file: the secret this "
                     "instance presents to its peers (a token with the cluster scope)");
  }
  std::ifstream in(c.cluster_token_file, std::ios::binary);
  if (!in) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cannot read cluster_token_file " + c.cluster_token_file);
  }
  std::ostringstream text;
  text << in.rdbuf();
  const std::string_view secret = Trim(text.view());
  if (secret.empty() || secret.size() > kMaxClusterTokenBytes ||
      secret.find_first_of(" \t\r\n") != std::string_view::npos) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cluster_token_file " + c.cluster_token_file +
                         " must hold one secret of 1-256 bytes without spaces");
  }
  return std::string(secret);
}

}  // namespace seqd
