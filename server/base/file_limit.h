// The open-files limit (RLIMIT_NOFILE) a process needs for its connection
// caps: raised at start as far as the process may, and a verdict on whether
// it is enough.
//
// The soft limit is raised to `want`; so is the hard limit if it is lower
// and the process may raise it (CAP_SYS_RESOURCE). Without that right the
// soft limit goes as far as the hard one. Only a limit still below `want`
// after that deserves a warning: a low soft limit alone is the usual
// default (1024) and costs nothing.
//
// Thread safety: RaiseFileLimit calls `set` on the calling thread; the
// process-wide limit is shared, so call it once, at start.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>

namespace seqd {

inline constexpr uint64_t kNoFileLimit = std::numeric_limits<uint64_t>::max();  // unlimited

struct FileLimit {
  uint64_t soft = 0;
  uint64_t hard = 0;  // kNoFileLimit: unlimited

  bool operator==(const FileLimit&) const = default;
};

struct FileLimitOutcome {
  uint64_t want = 0;
  FileLimit before;
  FileLimit after;

  // True if the soft limit covers `want` now.
  bool enough() const { return after.soft >= want; }
  // True if the call changed a limit.
  bool raised() const { return after != before; }
};

// Raises `current` towards `want`: first soft and hard to `want` (the hard
// only upwards), and if `set` refuses that, soft to min(want, hard). `set`
// applies a limit and says whether it took (setrlimit for real; a fake in
// tests). Nothing is set when the soft limit already covers `want`.
FileLimitOutcome RaiseFileLimit(uint64_t want, FileLimit current,
                                const std::function<bool(FileLimit)>& set);

// RLIMIT_NOFILE of this process, raised as above with setrlimit. If the
// limit cannot be read, `before` and `after` are {want, want} (no verdict).
FileLimitOutcome RaiseProcessFileLimit(uint64_t want);

}  // namespace seqd
