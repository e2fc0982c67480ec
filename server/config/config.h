// seqd's settings: defaults, then the config file, then SEQD_* environment
// variables, then command-line flags (each later source wins).
//
// Every option has one name used three ways: `max_step` in the file,
// SEQD_MAX_STEP in the environment, --max-step on the command line.
//
// Thread safety: plain data; build once at start-up, then read-only.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "common/error.h"
#include "server/config/config_origin.h"
#include "server/core/key_rules.h"

namespace seqd {

struct Config {
  std::string config_file;  // --config; empty means none
  std::string store = "sqlite:./data/seqd.db";
  // Store groups (--store-group NAME=URL, repeated; docs/cluster.md): name
  // and URL of each, the home group first. Empty: `store` alone.
  std::vector<std::pair<std::string, std::string>> store_groups;
  std::string http_address = "127.0.0.1";
  int64_t http_port = 8080;
  int64_t threads = 0;              // network threads; 0 = one per core
  int64_t db_threads = 4;           // threads (and MySQL connections) for blocking store calls
  int64_t db_queue_max = 1000;      // store calls waiting for a db thread; beyond: 503 at once
  std::string store_password;       // overrides the store URL's; never shown
  std::string store_password_file;  // read into store_password at start
  double prefetch_fraction = 0.1;
  int64_t wait_deadline_ms = 1000;
  int64_t segment_duration_s = 900;
  int64_t min_runway_s = 0;
  int64_t max_step = 1'000'000;
  int64_t max_count = 10'000;
  int64_t key_idle_timeout_s = 600;
  int64_t key_refresh_interval_s = 60;
  int64_t max_cached_keys = 1'000'000;  // keys held in memory; LRU idle keys leave beyond it
  int64_t auto_create_rate = 100;       // new auto-created keys per second per token; 0: no limit
  int64_t auto_create_burst = 1000;
  std::vector<AutoKeyRule> auto_keys = DefaultAutoKeyRules();
  int64_t dense_max_count = 100'000;          // largest block per request of a dense key
  int64_t dense_token_retention_s = 86'400;   // dense request tokens remembered this long
  int64_t http_max_header_bytes = 8192;
  int64_t http_max_body_bytes = 262144;  // a 64 KiB message payload, JSON-escaped
  int64_t http_idle_timeout_s = 30;
  int64_t http_write_timeout_s = 30;  // a client must take each answer whole within this
  int64_t http_max_connections = 10000;
  int64_t http_max_unread_bytes_per_peer = 64 << 20;  // answers a client IP has not read
  std::string admin_address = "127.0.0.1";  // admin listener (/metrics, /, /healthz, /readyz)
  int64_t admin_port = -1;                  // -1 (default) disables; 0 picks one
  std::string tcp_address = "127.0.0.1";    // binary protocol and RESP listeners
  int64_t tcp_port = 7070;                  // binary protocol; -1 disables
  int64_t resp_port = -1;                   // Redis protocol; -1 (default) disables
  int64_t tcp_max_in_flight = 1024;         // unanswered requests per connection
  int64_t tcp_idle_timeout_s = 300;
  int64_t tcp_request_timeout_s = 10;  // a frame/command completes within this of its first byte
  int64_t tcp_write_timeout_s = 30;    // a client must take each reply write within this
  int64_t max_connections_per_peer = 1000;  // per client IP and listener
  int64_t tcp_max_connections = 10000;      // per listener
  int64_t tcp_max_frame_bytes = 1 << 20;
  int64_t tcp_max_output_bytes = 4 << 20;            // unsent bytes per binary connection
  int64_t tcp_max_unread_bytes_per_peer = 64 << 20;  // binary answers a client IP has not read
  int64_t tcp_max_subscriptions = 10000;             // conversations subscribed per connection
  int64_t msg_writers = 2;                           // message store writer threads
  int64_t msg_readers = 2;                           // message store read threads
  int64_t msg_max_batch = 1024;                      // messages per group-commit transaction
  int64_t msg_max_payload_bytes = 65536;
  int64_t msg_max_queued = 100000;             // sends waiting for a writer
  int64_t msg_max_pull_bytes = 1 << 20;        // JSON bytes of messages per HTTP pull answer
  int64_t sse_retry_ms = 3000;                 // the retry: hint of event streams
  int64_t sse_heartbeat_ms = 15000;            // a comment line this often on every stream
  int64_t sse_max_buffer_bytes = 1 << 20;      // a stream's unsent bytes before event: dropped
  int64_t sse_max_streams = 10000;             // streams and waiting long-polls, in all
  int64_t sse_max_streams_per_token = 64;      // the same per token
  bool snowflake = true;                       // serve snowflake IDs (leases a worker id)
  int64_t snowflake_epoch_ms = 1288834974657;  // Leaf's (Twitter's) epoch
  int64_t snowflake_time_bits = 41;
  int64_t snowflake_worker_bits = 10;
  int64_t snowflake_sequence_bits = 12;
  int64_t snowflake_max_backward_ms = 5;  // clock moved back by more: refuse
  int64_t snowflake_max_count = 4096;     // IDs per snowflake request
  int64_t snowflake_lease_ms = 30000;     // worker-id lease; renewed every third
  std::string snowflake_owner;            // empty: <hostname>:<http_port>
  bool cluster = false;                   // cluster mode (docs/cluster.md); MySQL stores only
  std::string advertise;                  // host:port peers reach our binary port at
  int64_t cluster_lease_ms = 3000;        // shard lease
  int64_t cluster_shards = 1024;          // used only when the cluster's tables are created
  int64_t placement_poll_ms = 0;          // store groups: a round reads it this often; 0: every
  std::string log_level = "info";
  std::string log_format = "text";   // or json: one JSON object per line
  std::string tokens_file;           // docs/security.md; empty: no tokens (loopback only)
  bool insecure_no_auth = false;     // serve without tokens on non-loopback addresses
  bool metrics_auth = false;         // /metrics needs the metrics scope
  int64_t auth_failure_budget = 20;  // wrong secrets per address per 10 s; 0: no blocking
  std::string cluster_token_file;    // the secret this instance presents to its peers
  std::string tls_cert;              // PEM certificate (chain) of the listeners; empty: no TLS
  std::string tls_key;               // its private key
  std::string tls_client_ca;         // clients must present a certificate of this CA (mTLS)
  std::string tls_listeners = "http,admin,binary,resp";  // which listeners use TLS
  std::string cluster_tls_ca;  // cluster mode with TLS: the CA peers' certificates chain to

  bool show_help = false;
  bool show_help_markdown = false;  // --help-markdown: docs/configuration.md
  bool show_version = false;
  bool print_config = false;  // --print-config: PrintConfig() and exit

  // Option name → where its value came from; an option not listed kept its
  // default. Filled by LoadConfig.
  std::map<std::string, OptionOrigin> origins;
};

// Parses everything. `env` is the process environment as name → value.
// Errors name the option and the source ("--max-step: ...").
Result<Config> LoadConfig(int argc, const char* const* argv,
                          const std::map<std::string, std::string>& env);

// `seqd --print-config`: every option as a `name = value  # source` line
// (a config file that LoadConfig reads back), secrets as <redacted>
// (config_print.cc).
std::string PrintConfig(const Config& config);

// The environment of this process, for LoadConfig.
std::map<std::string, std::string> ProcessEnvironment();

// The text printed by --help: every option with its flag, env var, default.
std::string ConfigHelp();

// The same table as Markdown (--help-markdown): docs/configuration.md is this
// text, and ctest configuration_reference fails when they differ.
std::string ConfigReferenceMarkdown();

}  // namespace seqd
