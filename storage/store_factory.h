// Builds the SegmentStore named by the --store flag.
//
// Thread safety: OpenStore may be called from any thread.
#pragma once

#include <memory>
#include <string_view>

#include "storage/segment_store.h"

namespace seqd {

// `spec` is one of
//   sqlite:PATH                        SqliteStore on PATH (parent dir created)
//   mysql://user:pass@host:port/db     MysqlStore (port defaults to 3306)
// Anything else is kInvalidArgument.
//
// sqlite: opens the file and runs EnsureSchema(); any failure is returned.
// mysql: only parses the URL. It does NOT connect and does NOT fail when the
// server is down: the server must start anyway and report not-ready
// (/readyz 503) until the database answers. The caller runs EnsureSchema()
// and Ping() once the database is reachable.
Result<std::unique_ptr<SegmentStore>> OpenStore(std::string_view spec);

}  // namespace seqd
