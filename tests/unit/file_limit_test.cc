// RaiseFileLimit over a fake setrlimit that records each call and allows
// only what a process with or without CAP_SYS_RESOURCE may do.
#include "server/base/file_limit.h"

#include <doctest/doctest.h>

#include <vector>

namespace seqd {
namespace {

// A process's RLIMIT_NOFILE: any soft limit up to the hard one, and a higher
// hard one only with the right to raise it.
struct FakeLimit {
  FileLimit now;
  bool may_raise_hard = false;
  std::vector<FileLimit> calls;

  bool Set(FileLimit l) {
    calls.push_back(l);
    if (l.soft > l.hard || (l.hard > now.hard && !may_raise_hard)) return false;
    now = l;
    return true;
  }
  FileLimitOutcome Raise(uint64_t want) {
    return RaiseFileLimit(want, now, [this](FileLimit l) { return Set(l); });
  }
};

}  // namespace

TEST_CASE("file limit: a low soft limit under a high hard one is raised, no warning") {
  FakeLimit f{{1024, 524288}};
  const FileLimitOutcome o = f.Raise(20264);
  CHECK(o.enough());
  CHECK(o.raised());
  CHECK(o.after == FileLimit{20264, 524288});
  CHECK(f.now == o.after);
}

TEST_CASE("file limit: enough already: nothing is set") {
  FakeLimit f{{65536, 65536}};
  const FileLimitOutcome o = f.Raise(20264);
  CHECK(o.enough());
  CHECK_FALSE(o.raised());
  CHECK(f.calls.empty());
}

TEST_CASE("file limit: a low hard limit: the soft one goes up to it, and a warning is due") {
  FakeLimit f{{1024, 4096}};
  const FileLimitOutcome o = f.Raise(20264);
  CHECK_FALSE(o.enough());
  CHECK(o.raised());
  CHECK(o.after == FileLimit{4096, 4096});
  REQUIRE(f.calls.size() == 2);
  CHECK(f.calls[0] == FileLimit{20264, 20264});  // refused: no right to raise the hard one
  CHECK(f.calls[1] == FileLimit{4096, 4096});
}

TEST_CASE("file limit: a low hard limit with the right to raise it: both go up, no warning") {
  FakeLimit f{{1024, 4096}, true};
  const FileLimitOutcome o = f.Raise(20264);
  CHECK(o.enough());
  CHECK(o.after == FileLimit{20264, 20264});
}

TEST_CASE("file limit: soft already at a low hard limit: nothing to gain, still short") {
  FakeLimit f{{4096, 4096}};
  const FileLimitOutcome o = f.Raise(20264);
  CHECK_FALSE(o.enough());
  CHECK_FALSE(o.raised());
  CHECK(f.calls.size() == 1);  // only the attempt at both
}

TEST_CASE("file limit: an unlimited hard limit stays unlimited") {
  FakeLimit f{{1024, kNoFileLimit}};
  const FileLimitOutcome o = f.Raise(20264);
  CHECK(o.enough());
  CHECK(o.after == FileLimit{20264, kNoFileLimit});
}

TEST_CASE("file limit: every refusal leaves the limit as it was") {
  const FileLimit start{1024, 4096};
  const FileLimitOutcome o = RaiseFileLimit(20264, start, [](FileLimit) { return false; });
  CHECK_FALSE(o.enough());
  CHECK_FALSE(o.raised());
  CHECK(o.after == start);
}

}  // namespace seqd
