// The --version line of seqctl and seqbench: "NAME X.Y.Z (commit C)", the
// version and commit that `seqd --version` prints for the same build.
#pragma once

#include <string>

#include "seqd_git_commit.h"  // generated at build time (cmake/git_commit.cmake)

namespace seqd::tools {

inline std::string VersionLine(const char* program) {
  return std::string(program) + " " SEQD_VERSION " (commit " SEQD_GIT_COMMIT ")";
}

}  // namespace seqd::tools
