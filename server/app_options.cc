#include "server/app_options.h"

#include <unistd.h>

#include <cstdio>

namespace seqd {

AllocatorOptions ToAllocatorOptions(const Config& c) {
  AllocatorOptions o;
  o.prefetch_fraction = c.prefetch_fraction;
  o.wait_deadline = std::chrono::milliseconds(c.wait_deadline_ms);
  o.segment_duration = std::chrono::seconds(c.segment_duration_s);
  o.max_step = c.max_step;
  o.max_count = c.max_count;
  o.idle_timeout = std::chrono::seconds(c.key_idle_timeout_s);
  return o;
}

HttpOptions ToHttpOptions(const Config& c) {
  HttpOptions o;
  o.address = c.http_address;
  o.port = static_cast<uint16_t>(c.http_port);
  o.max_header_bytes = static_cast<size_t>(c.http_max_header_bytes);
  o.max_body_bytes = static_cast<size_t>(c.http_max_body_bytes);
  o.idle_timeout = std::chrono::seconds(c.http_idle_timeout_s);
  o.max_connections = static_cast<size_t>(c.http_max_connections);
  return o;
}

BinaryServerOptions ToBinaryOptions(const Config& c) {
  BinaryServerOptions o;
  o.address = c.tcp_address;
  o.port = static_cast<uint16_t>(c.tcp_port);
  o.max_in_flight = static_cast<size_t>(c.tcp_max_in_flight);
  o.idle_timeout = std::chrono::seconds(c.tcp_idle_timeout_s);
  o.max_connections = static_cast<size_t>(c.tcp_max_connections);
  o.max_frame_bytes = static_cast<size_t>(c.tcp_max_frame_bytes);
  o.max_output_bytes = static_cast<size_t>(c.tcp_max_output_bytes);
  o.max_subscriptions = static_cast<size_t>(c.tcp_max_subscriptions);
  return o;
}

RespServerOptions ToRespOptions(const Config& c) {
  RespServerOptions o;
  o.address = c.tcp_address;
  o.port = static_cast<uint16_t>(c.resp_port);
  o.max_in_flight = static_cast<size_t>(c.tcp_max_in_flight);
  o.idle_timeout = std::chrono::seconds(c.tcp_idle_timeout_s);
  o.max_connections = static_cast<size_t>(c.tcp_max_connections);
  return o;
}

MessageServiceOptions ToMessageOptions(const Config& c) {
  MessageServiceOptions o;
  o.writers = static_cast<int>(c.msg_writers);
  o.readers = static_cast<int>(c.msg_readers);
  o.max_batch = static_cast<size_t>(c.msg_max_batch);
  o.max_payload_bytes = static_cast<size_t>(c.msg_max_payload_bytes);
  o.max_queued_sends = static_cast<size_t>(c.msg_max_queued);
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

std::string SnowflakeOwner(const Config& c, uint16_t http_port) {
  if (!c.snowflake_owner.empty()) return c.snowflake_owner;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) != 0 || host[0] == '\0') {
    std::snprintf(host, sizeof host, "localhost");
  }
  return std::string(host) + ":" + std::to_string(http_port);
}

}  // namespace seqd
