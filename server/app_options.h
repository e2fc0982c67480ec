// Each component's options, from the Config: the one place where config
// fields become component settings.
//
// Thread safety: pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "server/cluster/cluster_node.h"
#include "server/config/config.h"
#include "server/core/dense_allocator.h"
#include "server/core/segment_allocator.h"
#include "server/http/api_router.h"
#include "server/http/http_server.h"
#include "server/msg/message_service.h"
#include "server/resp/resp_server.h"
#include "server/snowflake/snowflake_generator.h"
#include "server/binary/binary_server.h"

namespace seqd {

AllocatorOptions ToAllocatorOptions(const Config& c);
DenseOptions ToDenseOptions(const Config& c);
HttpOptions ToHttpOptions(const Config& c);
// The HTTP options with the admin listener's address and port (admin_port
// must be >= 0).
HttpOptions ToAdminOptions(const Config& c);
// Event streams and long-polls; `clock` runs their timers.
StreamOptions ToStreamOptions(const Config& c, Clock* clock);
BinaryServerOptions ToBinaryOptions(const Config& c);
RespServerOptions ToRespOptions(const Config& c);
MessageServiceOptions ToMessageOptions(const Config& c);
// With enabled = c.snowflake.
SnowflakeOptions ToSnowflakeOptions(const Config& c);
// "<hostname>:<http_port>" unless snowflake_owner is set.
std::string SnowflakeOwner(const Config& c, uint16_t http_port);
// Cluster mode: the lease timing and shard count; a fresh instance id
// ("<hostname>-<pid>-<random>": a restarted process is a new member).
ClusterNodeOptions ToClusterOptions(const Config& c);
// `advertise` if set, else tcp_address (the host name for a wildcard
// address) and `binary_port`.
std::string AdvertisedAddress(const Config& c, uint16_t binary_port);

}  // namespace seqd
