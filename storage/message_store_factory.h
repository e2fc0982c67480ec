// Builds the MessageStore named by a store spec (the --store syntax).
//
// Thread safety: OpenMessageStore may be called from any thread.
#pragma once

#include <memory>
#include <string_view>

#include "storage/message_store.h"

namespace seqd {

// `spec` is one of
//   memory:                            MemoryMessageStore (tests, benchmarks)
//   sqlite:PATH                        SqliteMessageStore on PATH (parent dir created)
//   mysql://user:pass@host:port/db     MysqlMessageStore (port defaults to 3306;
//                                      several hosts: host1:port,host2:port)
// Anything else is kInvalidArgument.
//
// sqlite: opens the file and runs EnsureSchema(); any failure is returned.
// mysql: only parses the URL; it does NOT connect (the caller runs
// EnsureSchema() once the database answers), like OpenStore.
Result<std::unique_ptr<MessageStore>> OpenMessageStore(std::string_view spec);

}  // namespace seqd
