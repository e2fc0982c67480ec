// The option table: every setting with its help text, bounds and parser,
// as data in one place, so --help, files and environment variables cannot
// drift apart.
#include "server/config/config.h"

#include <charconv>
#include <functional>
#include <sstream>

#include "server/base/log.h"
#include "server/config/config_options.h"

extern char** environ;

namespace seqd {

namespace {

Status ParseSwitch(std::string_view v, bool& out) {
  if (v == "on" || v == "true") {
    out = true;
  } else if (v == "off" || v == "false") {
    out = false;
  } else {
    return MakeError(ErrorCode::kInvalidArgument,
                     "expected on or off, got '" + std::string(v) + "'");
  }
  return OkStatus();
}

Status ParseInt(std::string_view text, int64_t lo, int64_t hi, int64_t& out) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size() || v < lo || v > hi) {
    return MakeError(ErrorCode::kInvalidArgument, "expected an integer in [" + std::to_string(lo) +
                                                      ", " + std::to_string(hi) + "], got '" +
                                                      std::string(text) + "'");
  }
  out = v;
  return OkStatus();
}

Option IntOption(const char* name, const char* help, int64_t Config::*field, int64_t lo,
                 int64_t hi) {
  return Option{name, help,
                [=](Config& c, std::string_view v) { return ParseInt(v, lo, hi, c.*field); },
                [=](const Config& c) { return std::to_string(c.*field); }};
}

Option StringOption(const char* name, const char* help, std::string Config::*field) {
  return Option{name, help,
                [=](Config& c, std::string_view v) {
                  c.*field = std::string(v);
                  return OkStatus();
                },
                [=](const Config& c) { return c.*field; }};
}

// A group's name: 1-64 of [a-z0-9_-].
bool ValidGroupName(std::string_view name) {
  if (name.empty() || name.size() > 64) return false;
  for (char ch : name) {
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_' || ch == '-')) {
      return false;
    }
  }
  return true;
}

// An empty value adds none (what --print-config shows without groups).
Status AddStoreGroup(Config& c, std::string_view v) {
  if (v.empty()) return OkStatus();
  const size_t eq = v.find('=');
  const std::string_view name = v.substr(0, eq == std::string_view::npos ? 0 : eq);
  if (!ValidGroupName(name)) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "expected NAME=mysql://user:pass@host:port/db, NAME 1-64 of a-z 0-9 _ -");
  }
  const std::string_view url = v.substr(eq + 1);
  if (!url.starts_with("mysql://")) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "store group '" + std::string(name) + "': expected a mysql:// URL");
  }
  for (const auto& [have, _] : c.store_groups) {
    if (have == name) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "store group '" + std::string(name) + "' given twice");
    }
  }
  c.store_groups.emplace_back(std::string(name), std::string(url));
  return OkStatus();
}

std::string FormatRules(const std::vector<AutoKeyRule>& rules) {
  std::string out;
  for (const auto& r : rules) {
    if (!out.empty()) out += ",";
    out += r.prefix + ":" + std::to_string(r.step);
    if (r.mode == KeyMode::kDense) out += ":dense";
  }
  return out;
}

}  // namespace

const std::vector<Option>& Options() {
  static const std::vector<Option> options = {
      StringOption("config", "Config file (key = value lines, # comments).", &Config::config_file),
      Option{"store",
             "Where IDs are kept: sqlite:PATH (embedded) or mysql://user:pass@host:port/db "
             "(the nodes of a Galera cluster: host1:port,host2:port,...).",
             [](Config& c, std::string_view v) {
               if (!v.starts_with("sqlite:") && !v.starts_with("mysql://")) {
                 return Status(MakeError(ErrorCode::kInvalidArgument,
                                         "expected sqlite:PATH or mysql://user:pass@host:port/db"));
               }
               c.store = std::string(v);
               return OkStatus();
             },
             [](const Config& c) { return c.store; }},
      Option{"store_group",
             "Cluster mode: a store group NAME=URL (a MySQL/MariaDB database or Galera "
             "cluster of its own); give it once per group, the home group first, the same on "
             "every instance. Each shard's rows live in one group (docs/cluster.md, \"Store "
             "groups\"). Without it: --store is the one group.",
             [](Config& c, std::string_view v) { return AddStoreGroup(c, v); },
             [](const Config& c) {
               std::string out;
               for (const auto& [name, url] : c.store_groups) {
                 if (!out.empty()) out += ' ';
                 out += name + '=' + url;
               }
               return out;
             },
             /*bare_means_on=*/false, /*secret=*/false,
             /*reset=*/[](Config& c) { c.store_groups.clear(); },
             /*show_each=*/
             [](const Config& c) {
               std::vector<std::string> out;
               for (const auto& [name, url] : c.store_groups) out.push_back(name + '=' + url);
               return out;
             }},
      StringOption("http_address", "Address the HTTP listener binds.", &Config::http_address),
      IntOption("http_port", "HTTP port (0 picks a free one).", &Config::http_port, 0, 65535),
      IntOption("threads", "Network threads; 0 means one per core.", &Config::threads, 0, 256),
      IntOption("db_threads",
                "Threads for blocking store calls, and the MySQL connections the segment and "
                "message stores share (leases use one more; with store groups, each group gets "
                "this many, and as many more for reads, which run in one snapshot each).",
                &Config::db_threads, 1, 256),
      IntOption("db_queue_max",
                "Store calls (segment reservations, key admin, message reads) waiting for a "
                "database thread; beyond this, new ones fail at once with store_unavailable "
                "(503). Snowflake and cluster lease renewals have threads of their own.",
                &Config::db_queue_max, 1, 10'000'000),
      Option{"store_password",
             "MySQL password; overrides the one in the store URL. Set it as "
             "SEQD_STORE_PASSWORD or use store_password_file: a --store-password flag is "
             "visible to every local user (ps) and is discouraged. Never logged.",
             [](Config& c, std::string_view v) {
               c.store_password = std::string(v);
               return OkStatus();
             },
             [](const Config& c) { return c.store_password; }, /*bare_means_on=*/false,
             /*secret=*/true},
      StringOption("store_password_file",
                   "File whose first line is the MySQL password (overrides the store URL's).",
                   &Config::store_password_file),
      Option{"prefetch_fraction",
             "Reserve the next segment once this fraction of the current one is used.",
             [](Config& c, std::string_view v) {
               try {
                 size_t used = 0;
                 double d = std::stod(std::string(v), &used);
                 if (used != v.size() || !(d >= 0.0 && d < 1.0)) throw std::invalid_argument("");
                 c.prefetch_fraction = d;
                 return OkStatus();
               } catch (const std::exception&) {
                 return Status(
                     MakeError(ErrorCode::kInvalidArgument,
                               "expected a number in [0, 1), got '" + std::string(v) + "'"));
               }
             },
             [](const Config& c) {
               std::ostringstream o;
               o << c.prefetch_fraction;
               return o.str();
             }},
      IntOption("wait_deadline_ms",
                "How long a request waits for a segment when both buffers are empty, then 503.",
                &Config::wait_deadline_ms, 1, 60'000),
      IntOption("segment_duration_s", "Target lifetime of a segment; drives the dynamic step.",
                &Config::segment_duration_s, 1, 86'400),
      IntOption("min_runway_s",
                "Grow the step (within max_step) until both buffers hold this many seconds of "
                "IDs at the key's current rate; 0 = off.",
                &Config::min_runway_s, 0, 86'400),
      IntOption("max_step", "Upper bound of the dynamic step.", &Config::max_step, 1,
                1'000'000'000),
      IntOption("max_count", "Largest batch (count) one request may ask for.", &Config::max_count,
                1, 1'000'000),
      IntOption("key_idle_timeout_s", "Keys unused this long leave memory.",
                &Config::key_idle_timeout_s, 1, 30 * 86'400),
      IntOption("key_refresh_interval_s",
                "How often registered keys are checked against leaf_alloc (deleted rows go).",
                &Config::key_refresh_interval_s, 1, 86'400),
      IntOption("max_cached_keys",
                "Keys held in memory at most (about 200 bytes each); beyond it the least "
                "recently used idle keys leave (their unused IDs are skipped, as after "
                "key_idle_timeout_s). 0: no cap.",
                &Config::max_cached_keys, 0, 100'000'000),
      IntOption("auto_create_rate",
                "New keys each token may auto-create (by an auto_keys rule) per second; over it "
                "requests for new keys fail with 429 resource_exhausted. Keys whose rows exist "
                "never count. 0: no limit.",
                &Config::auto_create_rate, 0, 1'000'000),
      IntOption("auto_create_burst",
                "Auto-created keys a token may create at once before auto_create_rate applies.",
                &Config::auto_create_burst, 1, 100'000'000),
      Option{"auto_keys",
             "Auto-created key rules, PREFIX:STEP[:dense|:segment][,...]: the keys served without "
             "a row of leaf_alloc. One rule for IDs and conversations: a message send, member or "
             "min_seq change to a conversation id that no rule matches and that has no row is "
             "unknown_key too. A PREFIX of * matches every key (every conversation id works; "
             "its mode then applies to registered keys too). :dense keys never skip an ID and "
             "their max is the last one handed out (docs/dense-keys.md); :segment keys (the "
             "mode without a suffix) are Leaf's, fastest, with holes at restarts. The default "
             "covers OpenIM's conversation prefixes, dense. Empty: registered keys only.",
             [](Config& c, std::string_view v) {
               std::vector<AutoKeyRule> rules;
               while (!v.empty()) {
                 size_t comma = v.find(',');
                 std::string_view item = v.substr(0, comma);
                 auto rule = ParseAutoKeyRule(item);
                 if (!rule) return Status(rule.error());
                 rules.push_back(*rule);
                 v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
               }
               c.auto_keys = std::move(rules);
               return OkStatus();
             },
             [](const Config& c) { return FormatRules(c.auto_keys); }},
      IntOption("dense_max_count", "Largest block one request of a dense key may ask for.",
                &Config::dense_max_count, 1, 1'000'000),
      IntOption("dense_token_retention_s",
                "How long a dense key's request token is remembered: a retry within it gets "
                "the same block.",
                &Config::dense_token_retention_s, 60, 30 * 86'400),
      IntOption("http_max_header_bytes", "Largest accepted request header.",
                &Config::http_max_header_bytes, 1024, 1 << 20),
      IntOption("http_max_body_bytes", "Largest accepted request body.",
                &Config::http_max_body_bytes, 0, 64 << 20),
      IntOption("http_idle_timeout_s", "Close connections idle (or trickling) this long.",
                &Config::http_idle_timeout_s, 1, 3600),
      IntOption("http_write_timeout_s",
                "HTTP (and admin): a client that does not take an answer whole (or one write of "
                "an event stream) within this many seconds of its start is disconnected.",
                &Config::http_write_timeout_s, 1, 3600),
      IntOption("http_max_connections", "Open HTTP connections allowed at once.",
                &Config::http_max_connections, 1, 1'000'000),
      IntOption("http_max_unread_bytes_per_peer",
                "HTTP: bytes of answers one client IP address has not read yet (over all its "
                "connections, beyond what the sockets took); at or over it, its requests get 429 "
                "with Retry-After and a close, unanswered. 0: no cap.",
                &Config::http_max_unread_bytes_per_peer, 0, int64_t{1} << 40),
      StringOption("admin_address", "Address the admin listener binds.", &Config::admin_address),
      IntOption("admin_port",
                "Admin listener port (/metrics, /, /healthz, /readyz only); 0 picks one, -1 "
                "disables.",
                &Config::admin_port, -1, 65535),
      StringOption("tcp_address", "Address the binary-protocol and RESP listeners bind.",
                   &Config::tcp_address),
      IntOption("tcp_port", "Binary protocol port (docs/protocol.md); 0 picks one, -1 disables.",
                &Config::tcp_port, -1, 65535),
      IntOption("resp_port",
                "Redis-protocol (RESP2) port for INCR/INCRBY; 0 picks one, -1 disables.",
                &Config::resp_port, -1, 65535),
      IntOption("tcp_max_in_flight",
                "Unanswered requests per binary/RESP connection before reading pauses.",
                &Config::tcp_max_in_flight, 1, 1'000'000),
      IntOption("tcp_idle_timeout_s",
                "Close binary/RESP connections idle this long with nothing in flight.",
                &Config::tcp_idle_timeout_s, 1, 86'400),
      IntOption("tcp_max_connections", "Open connections allowed per binary/RESP listener.",
                &Config::tcp_max_connections, 1, 1'000'000),
      IntOption("tcp_request_timeout_s",
                "Binary/RESP: a frame or command must arrive whole within this many seconds of "
                "its first byte, else the connection is closed (slow clients).",
                &Config::tcp_request_timeout_s, 1, 3600),
      IntOption("tcp_write_timeout_s",
                "Binary/RESP: a client that takes longer than this to accept a pending reply "
                "write (it does not read) is closed.",
                &Config::tcp_write_timeout_s, 1, 3600),
      IntOption("max_connections_per_peer",
                "Open connections one client IP address may hold per listener (HTTP, admin, "
                "binary, RESP); beyond it new ones are refused.",
                &Config::max_connections_per_peer, 1, 1'000'000),
      IntOption("tcp_max_frame_bytes", "Largest binary-protocol frame accepted.",
                &Config::tcp_max_frame_bytes, 64, 1 << 20),
      IntOption("tcp_max_output_bytes",
                "Unsent answers and pushes per binary connection: reading pauses above it, and a "
                "push that would pass it drops the connection's subscriptions (PUSH_DROPPED).",
                &Config::tcp_max_output_bytes, 64 << 10, 1 << 30),
      IntOption("tcp_max_unread_bytes_per_peer",
                "Binary: bytes of answers one client IP address has not read yet (over all its "
                "connections, beyond what the sockets took); at or over it, its next request "
                "closes its connection with a RESOURCE_EXHAUSTED error frame, unanswered. 0: no "
                "cap.",
                &Config::tcp_max_unread_bytes_per_peer, 0, int64_t{1} << 40),
      IntOption("tcp_max_subscriptions", "Conversations one binary connection may subscribe to.",
                &Config::tcp_max_subscriptions, 1, 10'000'000),
      IntOption("msg_writers",
                "Message store writer threads; conversations are sharded across them.",
                &Config::msg_writers, 1, 64),
      IntOption("msg_readers", "Message store threads for pulls, members and batch reads.",
                &Config::msg_readers, 1, 256),
      IntOption("msg_max_batch", "Messages stored per group-commit transaction, at most.",
                &Config::msg_max_batch, 1, 100'000),
      IntOption("msg_max_payload_bytes", "Largest message payload accepted.",
                &Config::msg_max_payload_bytes, 1, 4 << 20),
      IntOption("msg_max_queued",
                "Sends waiting to be stored before new ones fail with store_unavailable.",
                &Config::msg_max_queued, 1, 10'000'000),
      IntOption("msg_max_pull_bytes",
                "HTTP message pulls answer at most about this many bytes of messages (at least "
                "one message), with is_end false and next_from/next_to to continue.",
                &Config::msg_max_pull_bytes, 1024, 1 << 30),
      IntOption("sse_retry_ms",
                "Server-Sent Events: the retry: hint each stream starts with (how long a "
                "browser waits before it reconnects).",
                &Config::sse_retry_ms, 0, 3'600'000),
      IntOption("sse_heartbeat_ms",
                "Server-Sent Events: a comment line (: hb) this often on every stream, so "
                "idle proxies keep it open; 0: none.",
                &Config::sse_heartbeat_ms, 0, 3'600'000),
      IntOption("sse_max_buffer_bytes",
                "Server-Sent Events: bytes a stream may have queued and unsent; a live event "
                "that does not fit ends the stream with event: dropped (the client resumes "
                "from its Last-Event-ID and loses nothing).",
                &Config::sse_max_buffer_bytes, 1024, 1 << 30),
      IntOption("sse_max_streams",
                "Server-Sent Events streams and waiting long-poll pulls open at once; beyond "
                "this, new ones get 429.",
                &Config::sse_max_streams, 1, 10'000'000),
      IntOption("sse_max_streams_per_token",
                "The same per token (counted only when tokens are on).",
                &Config::sse_max_streams_per_token, 1, 10'000'000),
      Option{"snowflake", "Serve snowflake (time-ordered) IDs: on or off.",
             [](Config& c, std::string_view v) {
               if (v != "on" && v != "off") {
                 return Status(MakeError(ErrorCode::kInvalidArgument,
                                         "expected on or off, got '" + std::string(v) + "'"));
               }
               c.snowflake = v == "on";
               return OkStatus();
             },
             [](const Config& c) { return std::string(c.snowflake ? "on" : "off"); }},
      Option{"cluster",
             "Cluster mode (docs/cluster.md): every key is served by one live instance at a "
             "time, so IDs and message seqs grow in real-time order across instances; others "
             "forward to it. MySQL/MariaDB stores only. --cluster alone means on.",
             [](Config& c, std::string_view v) { return ParseSwitch(v, c.cluster); },
             [](const Config& c) { return std::string(c.cluster ? "on" : "off"); },
             /*bare_means_on=*/true},
      StringOption("advertise",
                   "Cluster mode: host:port at which the other instances reach this one's binary "
                   "protocol. Default: tcp_address (or the host name if it is a wildcard) and the "
                   "port actually bound.",
                   &Config::advertise),
      IntOption("cluster_lease_ms",
                "Cluster mode: shard lease. A killed instance's keys move after about this long; "
                "renewed every quarter of it. Every instance must use the same value.",
                &Config::cluster_lease_ms, 500, 60'000),
      IntOption("cluster_shards",
                "Cluster mode: shards the keys hash into, fixed when the cluster's tables are "
                "created (later values are ignored).",
                &Config::cluster_shards, 1, 65'536),
      IntOption("placement_poll_ms",
                "Store groups: how often a lease round reads the placement version on its own "
                "(ms); 0: every round. A round reads it sooner when nudged (a move's switch "
                "nudges every instance) and when a peer's reply or request carries a newer "
                "version (docs/cluster.md, \"Store groups\").",
                &Config::placement_poll_ms, 0, 3'600'000),
      StringOption("tokens_file",
                   "Tokens (docs/security.md): one per line, ID SHA256HEX SCOPE[,SCOPE...]; every "
                   "listener then requires one. SIGHUP reloads it. Without it seqd serves only on "
                   "loopback addresses (see insecure_no_auth).",
                   &Config::tokens_file),
      Option{"insecure_no_auth",
             "Serve without tokens even on non-loopback addresses (logs a warning at start and "
             "every hour). --insecure-no-auth alone means on.",
             [](Config& c, std::string_view v) { return ParseSwitch(v, c.insecure_no_auth); },
             [](const Config& c) { return std::string(c.insecure_no_auth ? "on" : "off"); },
             /*bare_means_on=*/true},
      Option{"metrics_auth",
             "With tokens: /metrics needs a token with the metrics scope (Prometheus: "
             "authorization in the scrape config). --metrics-auth alone means on.",
             [](Config& c, std::string_view v) { return ParseSwitch(v, c.metrics_auth); },
             [](const Config& c) { return std::string(c.metrics_auth ? "on" : "off"); },
             /*bare_means_on=*/true},
      IntOption("auth_failure_budget",
                "With tokens: wrong secrets an address may give within 10 s before it is "
                "blocked (every authentication refused) for 1 s, doubling on each repeat up to "
                "60 s (docs/security.md). 0: never blocked.",
                &Config::auth_failure_budget, 0, 1'000'000),
      StringOption("cluster_token_file",
                   "Cluster mode with tokens: a file holding the secret this instance presents "
                   "to the others (their tokens files list its SHA-256 with the cluster scope).",
                   &Config::cluster_token_file),
      StringOption("tls_cert",
                   "TLS: the listeners' certificate (PEM, then any intermediates); with "
                   "tls_key, the listeners in tls_listeners speak TLS only. SIGHUP reloads it.",
                   &Config::tls_cert),
      StringOption("tls_key", "TLS: the certificate's private key (PEM, unencrypted).",
                   &Config::tls_key),
      StringOption("tls_client_ca",
                   "TLS: clients must present a certificate signed by this CA (PEM bundle): "
                   "mutual TLS.",
                   &Config::tls_client_ca),
      StringOption("tls_listeners",
                   "TLS: the listeners that use it, comma-separated from http, admin, binary, "
                   "resp.",
                   &Config::tls_listeners),
      StringOption("cluster_tls_ca",
                   "Cluster mode with TLS on the binary listener: the CA (PEM) the peers' "
                   "certificates are verified against (default: the system's CAs). With "
                   "tls_client_ca, an instance presents its own tls_cert to its peers.",
                   &Config::cluster_tls_ca),
      IntOption("snowflake_epoch_ms",
                "Unix ms the snowflake time field counts from (Leaf's epoch by default, so IDs "
                "keep rising after a switch from Leaf).",
                &Config::snowflake_epoch_ms, 0, 4'102'444'800'000),
      IntOption("snowflake_time_bits", "Bits of milliseconds in a snowflake ID.",
                &Config::snowflake_time_bits, 1, 62),
      IntOption("snowflake_worker_bits",
                "Bits of worker id in a snowflake ID (2^bits processes at once).",
                &Config::snowflake_worker_bits, 1, 20),
      IntOption("snowflake_sequence_bits",
                "Bits of sequence per millisecond in a snowflake ID (time + worker + sequence "
                "bits <= 63).",
                &Config::snowflake_sequence_bits, 1, 61),
      IntOption("snowflake_max_backward_ms",
                "A clock moved back by at most this is waited out; by more, requests fail "
                "(503 not_serving) until it catches up.",
                &Config::snowflake_max_backward_ms, 0, 10'000),
      IntOption("snowflake_max_count", "Largest count one snowflake request may ask for.",
                &Config::snowflake_max_count, 1, 100'000),
      IntOption("snowflake_lease_ms",
                "Worker-id lease length; renewed every third of it. IDs stop if it cannot be "
                "renewed in time.",
                &Config::snowflake_lease_ms, 300, 3'600'000),
      StringOption("snowflake_owner",
                   "Who this process is in the lease table (at most 255 bytes); the same owner "
                   "gets its worker id back. Empty: <hostname>:<http_port>.",
                   &Config::snowflake_owner),
      Option{"log_format",
             "text, or json: one JSON object per line (time, level, message and fields; "
             "audit events too).",
             [](Config& c, std::string_view v) {
               if (auto f = ParseLogFormat(v); !f) return Status(f.error());
               c.log_format = std::string(v);
               return OkStatus();
             },
             [](const Config& c) { return c.log_format; }},
      Option{"log_level", "debug, info, warn or error.",
             [](Config& c, std::string_view v) {
               if (auto l = ParseLogLevel(v); !l) return Status(l.error());
               c.log_level = std::string(v);
               return OkStatus();
             },
             [](const Config& c) { return c.log_level; }},
  };
  return options;
}

std::string FlagName(std::string_view name) {
  std::string out = "--";
  for (char c : name) out += c == '_' ? '-' : c;
  return out;
}

std::string EnvName(std::string_view name) {
  std::string out = "SEQD_";
  for (char c : name) out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

const Option* FindOption(std::string_view name) {
  for (const Option& o : Options()) {
    if (name == o.name) return &o;
  }
  return nullptr;
}

Status Apply(Config& c, const Option& o, std::string_view value, const std::string& source,
             OptionOrigin origin) {
  if (o.reset != nullptr) {
    auto seen = c.origins.find(o.name);
    if (seen != c.origins.end() && seen->second.source != origin.source) o.reset(c);
  }
  if (auto s = o.set(c, value); !s) {
    return MakeError(ErrorCode::kInvalidArgument, source + ": " + s.error().message);
  }
  c.origins[o.name] = std::move(origin);
  return OkStatus();
}

namespace {

// With store groups: several need cluster mode; `store`, if given, must be
// one group's URL; else it becomes the home group's.
Status CheckStoreGroups(Config& c) {
  if (c.store_groups.empty()) return OkStatus();
  if (c.store_groups.size() > 1 && !c.cluster) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "several store groups need cluster mode (--cluster)");
  }
  if (c.origins.count("store") == 0) {
    c.store = c.store_groups.front().second;
    return OkStatus();
  }
  for (const auto& [name, url] : c.store_groups) {
    if (url == c.store) return OkStatus();
  }
  return MakeError(ErrorCode::kInvalidArgument,
                   "store: with store groups, --store must be one group's URL (or left out)");
}

}  // namespace

Result<Config> LoadConfig(int argc, const char* const* argv,
                          const std::map<std::string, std::string>& env) {
  Config c;
  // Flags are collected first so --config can come from any source.
  std::vector<std::pair<const Option*, std::string>> flags;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      c.show_help = true;
      continue;
    }
    if (arg == "--help-markdown") {
      c.show_help_markdown = true;
      continue;
    }
    if (arg == "--version") {
      c.show_version = true;
      continue;
    }
    if (arg == "--print-config") {
      c.print_config = true;
      continue;
    }
    if (!arg.starts_with("--")) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "unexpected argument '" + std::string(arg) + "' (see --help)");
    }
    std::string_view name = arg.substr(2);
    std::optional<std::string> value;
    if (size_t eq = name.find('='); eq != std::string_view::npos) {
      value = std::string(name.substr(eq + 1));
      name = name.substr(0, eq);
    }
    std::string key(name);
    for (char& ch : key) ch = ch == '-' ? '_' : ch;
    const Option* o = FindOption(key);
    if (!o) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "unknown flag '--" + std::string(name) + "' (see --help)");
    }
    if (!value && o->bare_means_on &&
        (i + 1 >= argc || std::string_view(argv[i + 1]).starts_with("--"))) {
      value = "on";
    }
    if (!value) {
      if (i + 1 >= argc) {
        return MakeError(ErrorCode::kInvalidArgument, FlagName(key) + ": needs a value");
      }
      value = argv[++i];
    }
    flags.emplace_back(o, *value);
  }
  if (c.show_help || c.show_help_markdown || c.show_version) return c;

  std::string config_file;
  OptionOrigin config_origin{ConfigSource::kEnvironment, "SEQD_CONFIG"};
  if (auto it = env.find("SEQD_CONFIG"); it != env.end()) config_file = it->second;
  for (auto& [o, v] : flags) {
    if (std::string_view(o->name) == "config") {
      config_file = v;
      config_origin = {ConfigSource::kFlag, FlagName(o->name)};
    }
  }
  if (!config_file.empty()) {
    c.config_file = config_file;
    c.origins["config"] = std::move(config_origin);
    if (auto s = ApplyFile(c, config_file); !s) return s.error();
  }
  for (const Option& o : Options()) {
    if (std::string_view(o.name) == "config") continue;
    const std::string var = EnvName(o.name);
    if (auto it = env.find(var); it != env.end()) {
      if (auto s = Apply(c, o, it->second, var, {ConfigSource::kEnvironment, var}); !s) {
        return s.error();
      }
    }
  }
  for (auto& [o, v] : flags) {
    if (std::string_view(o->name) == "config") continue;
    const std::string flag = FlagName(o->name);
    if (auto s = Apply(c, *o, v, flag, {ConfigSource::kFlag, flag}); !s) return s.error();
  }
  if (auto s = ReadStorePassword(c); !s) return s.error();
  if (c.snowflake_time_bits + c.snowflake_worker_bits + c.snowflake_sequence_bits > 63) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "snowflake_time_bits + snowflake_worker_bits + snowflake_sequence_bits must "
                     "be at most 63, got " +
                         std::to_string(c.snowflake_time_bits + c.snowflake_worker_bits +
                                        c.snowflake_sequence_bits));
  }
  if (c.snowflake_owner.size() > 255) {
    return MakeError(ErrorCode::kInvalidArgument, "snowflake_owner: at most 255 bytes");
  }
  for (char ch : c.snowflake_owner) {
    if (ch < 0x21 || ch > 0x7e) {
      return MakeError(ErrorCode::kInvalidArgument,
                       "snowflake_owner: printable ASCII without spaces only (host:port)");
    }
  }
  if (auto s = CheckStoreGroups(c); !s) return s.error();
  if (c.cluster && !c.store.starts_with("mysql://")) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cluster mode needs a mysql:// store (the instances share its lease tables)");
  }
  if (c.cluster && c.tcp_port < 0) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "cluster mode needs the binary listener (tcp_port >= 0): instances forward "
                     "requests to each other over it");
  }
  if (c.advertise.size() > 255 ||
      (!c.advertise.empty() && c.advertise.find(':') == std::string::npos)) {
    return MakeError(ErrorCode::kInvalidArgument, "advertise: expected host:port");
  }
  // A request may wait at most wait_deadline_ms: for a clock moved back
  // within the bound, and for the milliseconds a full count needs.
  if (c.snowflake_max_backward_ms > c.wait_deadline_ms) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "snowflake_max_backward_ms (" + std::to_string(c.snowflake_max_backward_ms) +
                         ") must be at most wait_deadline_ms (" +
                         std::to_string(c.wait_deadline_ms) + "): such a wait would always fail");
  }
  const int64_t per_ms = int64_t{1} << c.snowflake_sequence_bits;
  const int64_t ms_needed = (c.snowflake_max_count + per_ms - 1) / per_ms + 1;
  if (ms_needed > c.wait_deadline_ms) {
    return MakeError(ErrorCode::kInvalidArgument,
                     "snowflake_max_count " + std::to_string(c.snowflake_max_count) + " needs " +
                         std::to_string(ms_needed) + " ms at " + std::to_string(per_ms) +
                         " IDs per ms, more than wait_deadline_ms (" +
                         std::to_string(c.wait_deadline_ms) + ")");
  }
  return c;
}

std::map<std::string, std::string> ProcessEnvironment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv = *e;
    if (!kv.starts_with("SEQD_")) continue;
    size_t eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

}  // namespace seqd
