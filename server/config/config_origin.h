// Where one option's effective value came from, for `seqd --print-config`.
//
// Thread safety: plain data.
#pragma once

#include <string>

namespace seqd {

enum class ConfigSource { kDefault, kFile, kEnvironment, kFlag };

struct OptionOrigin {
  ConfigSource source = ConfigSource::kDefault;
  // kFile: "PATH:LINE" of the config file (or the path of the file a secret
  // was read from); kEnvironment: the variable's name; kFlag: "--name".
  std::string where;
};

}  // namespace seqd
