#include "server/base/file_limit.h"

#include <sys/resource.h>

#include <algorithm>

namespace seqd {
namespace {

uint64_t FromRlim(rlim_t v) { return v == RLIM_INFINITY ? kNoFileLimit : uint64_t{v}; }
rlim_t ToRlim(uint64_t v) { return v == kNoFileLimit ? RLIM_INFINITY : static_cast<rlim_t>(v); }

}  // namespace

FileLimitOutcome RaiseFileLimit(uint64_t want, FileLimit current,
                                const std::function<bool(FileLimit)>& set) {
  FileLimitOutcome out{want, current, current};
  if (current.soft >= want) return out;
  // Both up to `want` (needs the right to raise the hard limit if it is lower).
  const FileLimit both{want, std::max(current.hard, want)};
  if (set(both)) {
    out.after = both;
    return out;
  }
  // Only the soft one, as far as the hard one allows.
  const FileLimit soft_only{std::min(want, current.hard), current.hard};
  if (soft_only != current && set(soft_only)) out.after = soft_only;
  return out;
}

FileLimitOutcome RaiseProcessFileLimit(uint64_t want) {
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return {want, {want, want}, {want, want}};
  auto set = [](FileLimit l) {
    const rlimit r{ToRlim(l.soft), ToRlim(l.hard)};
    return setrlimit(RLIMIT_NOFILE, &r) == 0;
  };
  return RaiseFileLimit(want, {FromRlim(lim.rlim_cur), FromRlim(lim.rlim_max)}, set);
}

}  // namespace seqd
