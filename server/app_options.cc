#include "server/app_options.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <utility>

namespace seqd {

AllocatorOptions ToAllocatorOptions(const Config& c) {
  AllocatorOptions o;
  o.prefetch_fraction = c.prefetch_fraction;
  o.wait_deadline = std::chrono::milliseconds(c.wait_deadline_ms);
  o.segment_duration = std::chrono::seconds(c.segment_duration_s);
  o.min_runway = std::chrono::seconds(c.min_runway_s);
  o.max_step = c.max_step;
  o.max_count = c.max_count;
  o.idle_timeout = std::chrono::seconds(c.key_idle_timeout_s);
  o.max_cached_keys = static_cast<size_t>(c.max_cached_keys);
  o.auto_create_rate = static_cast<double>(c.auto_create_rate);
  o.auto_create_burst = static_cast<double>(c.auto_create_burst);
  // Half the database threads for reservation batches: a burst of new keys
  // leaves the rest to message reads and admin calls.
  o.reservation_flushes = static_cast<size_t>(std::max<int64_t>(1, c.db_threads / 2));
  return o;
}

DenseOptions ToDenseOptions(const Config& c) {
  DenseOptions o;
  o.max_count = c.dense_max_count;
  o.auto_create_rate = static_cast<double>(c.auto_create_rate);
  o.auto_create_burst = static_cast<double>(c.auto_create_burst);
  o.reservation_flushes = static_cast<size_t>(std::max<int64_t>(1, c.db_threads / 2));
  return o;
}

namespace {

enum class ListenerKind { kHttp, kAdmin, kBinary, kResp };

struct Endpoint {
  std::string address;
  int64_t port;
};

Endpoint EndpointOf(const Config& c, ListenerKind kind) {
  switch (kind) {
    case ListenerKind::kHttp:
      return {c.http_address, c.http_port};
    case ListenerKind::kAdmin:
      return {c.admin_address, c.admin_port};
    case ListenerKind::kBinary:
      return {c.tcp_address, c.tcp_port};
    case ListenerKind::kResp:
      return {c.tcp_address, c.resp_port};
  }
  return {};
}

// The fields every listener has, from the config: the HTTP group for the
// HTTP and admin listeners, the tcp group for binary and RESP. `o`'s TLS and
// io_contexts are left as they are (the app sets them).
void FillListenerOptions(const Config& c, ListenerKind kind, ListenerOptions& o) {
  const bool http = kind == ListenerKind::kHttp || kind == ListenerKind::kAdmin;
  Endpoint endpoint = EndpointOf(c, kind);
  o.address = std::move(endpoint.address);
  o.port = static_cast<uint16_t>(endpoint.port);
  o.max_connections = static_cast<size_t>(http ? c.http_max_connections : c.tcp_max_connections);
  o.max_connections_per_peer = static_cast<size_t>(c.max_connections_per_peer);
  o.idle_timeout = std::chrono::seconds(http ? c.http_idle_timeout_s : c.tcp_idle_timeout_s);
  o.write_timeout = std::chrono::seconds(http ? c.http_write_timeout_s : c.tcp_write_timeout_s);
}

HttpOptions ToHttpListenerOptions(const Config& c, ListenerKind kind) {
  HttpOptions o;
  FillListenerOptions(c, kind, o);
  o.max_header_bytes = static_cast<size_t>(c.http_max_header_bytes);
  o.max_body_bytes = static_cast<size_t>(c.http_max_body_bytes);
  o.max_unread_bytes_per_peer = static_cast<size_t>(c.http_max_unread_bytes_per_peer);
  return o;
}

// The binary protocol's or RESP's options: the listener's fields and the
// rest of the tcp group they share.
template <typename Options>
Options ToTcpOptions(const Config& c, ListenerKind kind) {
  Options o;
  FillListenerOptions(c, kind, o);
  o.max_in_flight = static_cast<size_t>(c.tcp_max_in_flight);
  o.request_timeout = std::chrono::seconds(c.tcp_request_timeout_s);
  return o;
}

}  // namespace

HttpOptions ToHttpOptions(const Config& c) { return ToHttpListenerOptions(c, ListenerKind::kHttp); }

HttpOptions ToAdminOptions(const Config& c) {
  return ToHttpListenerOptions(c, ListenerKind::kAdmin);
}

StreamOptions ToStreamOptions(const Config& c, Clock* clock) {
  StreamOptions o;
  o.clock = clock;
  o.events.retry = std::chrono::milliseconds(c.sse_retry_ms);
  o.events.heartbeat = std::chrono::milliseconds(c.sse_heartbeat_ms);
  o.max_buffer_bytes = static_cast<size_t>(c.sse_max_buffer_bytes);
  o.max_streams = static_cast<size_t>(c.sse_max_streams);
  o.max_streams_per_token = static_cast<size_t>(c.sse_max_streams_per_token);
  return o;
}

BinaryServerOptions ToBinaryOptions(const Config& c) {
  auto o = ToTcpOptions<BinaryServerOptions>(c, ListenerKind::kBinary);
  o.max_frame_bytes = static_cast<size_t>(c.tcp_max_frame_bytes);
  o.max_output_bytes = static_cast<size_t>(c.tcp_max_output_bytes);
  o.max_unread_bytes_per_peer = static_cast<size_t>(c.tcp_max_unread_bytes_per_peer);
  o.max_subscriptions = static_cast<size_t>(c.tcp_max_subscriptions);
  return o;
}

RespServerOptions ToRespOptions(const Config& c) {
  return ToTcpOptions<RespServerOptions>(c, ListenerKind::kResp);
}

MessageServiceOptions ToMessageOptions(const Config& c) {
  MessageServiceOptions o;
  o.writers = static_cast<int>(c.msg_writers);
  o.readers = static_cast<int>(c.msg_readers);
  o.max_batch = static_cast<size_t>(c.msg_max_batch);
  o.max_payload_bytes = static_cast<size_t>(c.msg_max_payload_bytes);
  o.max_queued_sends = static_cast<size_t>(c.msg_max_queued);
  o.max_pull_bytes = static_cast<size_t>(c.msg_max_pull_bytes);
  o.max_queued_reads = static_cast<size_t>(c.db_queue_max);
  o.key_rules = KeyRules(c.auto_keys);  // one rule for IDs and conversations
  return o;
}

SnowflakeOptions ToSnowflakeOptions(const Config& c) {
  SnowflakeOptions o;
  o.layout.time_bits = static_cast<int>(c.snowflake_time_bits);
  o.layout.worker_bits = static_cast<int>(c.snowflake_worker_bits);
  o.layout.sequence_bits = static_cast<int>(c.snowflake_sequence_bits);
  o.layout.epoch_ms = c.snowflake_epoch_ms;
  o.max_backward_ms = c.snowflake_max_backward_ms;
  o.max_count = c.snowflake_max_count;
  o.wait_deadline = std::chrono::milliseconds(c.wait_deadline_ms);
  o.enabled = c.snowflake;
  return o;
}

namespace {

std::string HostName() {
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "localhost");
  }
  return host;
}

}  // namespace

std::string SnowflakeOwner(const Config& c, uint16_t http_port) {
  if (!c.snowflake_owner.empty()) return c.snowflake_owner;
  return HostName() + ":" + std::to_string(http_port);
}

ClusterNodeOptions ToClusterOptions(const Config& c) {
  ClusterNodeOptions o;
  std::random_device random;
  char suffix[17];
  std::snprintf(suffix, sizeof suffix, "%08x%08x", random(), random());
  o.instance = HostName().substr(0, 64) + "-" + std::to_string(::getpid()) + "-" + suffix;
  o.shards = static_cast<uint32_t>(c.cluster_shards);
  o.timing.lease = std::chrono::milliseconds(c.cluster_lease_ms);
  o.placement_poll = std::chrono::milliseconds(c.placement_poll_ms);
  return o;
}

std::string AdvertisedAddress(const Config& c, uint16_t binary_port) {
  if (!c.advertise.empty()) return c.advertise;
  const bool wildcard = c.tcp_address.empty() || c.tcp_address == "0.0.0.0" ||
                        c.tcp_address == "::" || c.tcp_address == "[::]";
  std::string host = wildcard ? HostName() : c.tcp_address;
  if (host.find(':') != std::string::npos && !host.starts_with("[")) host = "[" + host + "]";
  return host + ":" + std::to_string(binary_port);
}

}  // namespace seqd
