// The text parsers of start-up and reload: the config file (with flags and
// environment), the store spec and MySQL URL, the tokens file and its
// scopes. Each must return a value or an error for any text, never echo a
// password, and whatever it accepts must read back the same once written
// out again.
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/scopes.h"
#include "common/token_digest.h"
#include "server/auth/authenticator.h"
#include "server/config/config.h"
#include "storage/mysql/mysql_pool.h"
#include "storage/mysql/mysql_store.h"
#include "storage/store_spec.h"
#include "tests/fuzz/fuzz_targets.h"

namespace seqd::fuzz {

namespace {

// A file holding `text` with a path LoadConfig can open, without touching
// the disk: a memfd named by /proc/self/fd.
class MemFile {
 public:
  explicit MemFile(std::string_view text) : fd_(::memfd_create("seqd-fuzz-config", 0)) {
    FUZZ_CHECK(fd_ >= 0);
    for (size_t done = 0; done < text.size();) {
      const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
      FUZZ_CHECK(n > 0);
      done += static_cast<size_t>(n);
    }
  }
  ~MemFile() { ::close(fd_); }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd_); }

 private:
  const int fd_;
};

// The pieces of `input` between NUL bytes.
std::vector<std::string_view> SplitNul(std::string_view input) {
  std::vector<std::string_view> out;
  for (;;) {
    const size_t nul = input.find('\0');
    out.push_back(input.substr(0, nul));
    if (nul == std::string_view::npos) return out;
    input.remove_prefix(nul + 1);
  }
}

std::vector<std::string_view> SplitLines(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    out.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

// The password of a mysql:// URL as ParseUrl reads it (between the first
// ':' and the last '@' of the user info), still percent-encoded.
std::string_view RawPassword(std::string_view url) {
  constexpr std::string_view kScheme = "mysql://";
  if (!url.starts_with(kScheme)) return {};
  std::string_view rest = url.substr(kScheme.size());
  const size_t at = rest.rfind('@');
  if (at == std::string_view::npos) return {};
  const std::string_view userinfo = rest.substr(0, at);
  const size_t colon = userinfo.find(':');
  return colon == std::string_view::npos ? std::string_view() : userinfo.substr(colon + 1);
}

// `url` with its password replaced by `with`.
std::string WithPassword(std::string_view url, std::string_view password, std::string_view with) {
  const size_t at = static_cast<size_t>(password.data() - url.data());
  return std::string(url.substr(0, at)) + std::string(with) +
         std::string(url.substr(at + password.size()));
}

// True if `text` shows the password of `url`: it holds the password, and
// with the password swapped for another of the same length it holds that
// one. Passwords found elsewhere in the URL (the user name, the database)
// or in the rest of the text (another option's value) are not judged: a
// message may name those.
template <typename Describe>
bool ShowsPassword(std::string_view url, Describe describe) {
  const std::string_view password = RawPassword(url);
  if (password.size() < 4 || password.find_first_of("%@/?") != std::string_view::npos) {
    return false;
  }
  if (WithPassword(url, password, "").find(password) != std::string::npos) return false;
  const std::string described = describe(url);
  if (described.find(password) == std::string::npos) return false;
  for (const char fill : {'Q', 'Z', 'K', 'J'}) {
    const std::string other(password.size(), fill);
    // A fill the text holds already (from the URL, or from anything else
    // the description shows, such as another option) proves nothing.
    if (url.find(other) != std::string_view::npos || described.find(other) != std::string::npos) {
      continue;
    }
    return describe(WithPassword(url, password, other)).find(other) != std::string::npos;
  }
  return false;
}

// The text of `scopes` as a tokens file writes them.
std::string ScopesText(const std::vector<Scope>& scopes) {
  std::string out;
  for (const Scope& s : scopes) {
    if (!out.empty()) out += ',';
    out += PermissionName(s.permission);
    const bool keyed = s.permission == Permission::kIds || s.permission == Permission::kMsgSend ||
                       s.permission == Permission::kMsgRead ||
                       s.permission == Permission::kMsgAdmin;
    if (keyed) out += s.all_keys ? ":*" : ":" + s.prefix;
  }
  return out;
}

}  // namespace

void ConfigFile(const uint8_t* data, size_t size) {
  // The config file, then (after a NUL) flags one per line, then (after
  // another NUL) environment lines NAME=VALUE. Flags and variables naming
  // another config file are left out.
  const std::vector<std::string_view> parts = SplitNul({reinterpret_cast<const char*>(data), size});
  const MemFile file(parts[0]);
  std::vector<std::string> args = {"seqd", "--config", file.path()};
  if (parts.size() > 1) {
    for (std::string_view line : SplitLines(parts[1])) {
      // Another config file could be a device that never ends (/dev/zero).
      if (!line.starts_with("--config")) args.emplace_back(line);
    }
  }
  std::map<std::string, std::string> env;
  if (parts.size() > 2) {
    for (std::string_view line : SplitLines(parts[2])) {
      const size_t eq = line.find('=');
      if (eq != std::string_view::npos && eq > 0 && line.substr(0, eq) != "SEQD_CONFIG") {
        env[std::string(line.substr(0, eq))] = std::string(line.substr(eq + 1));
      }
    }
  }
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  const auto load = [&](const std::vector<const char*>& v) {
    return LoadConfig(static_cast<int>(v.size()), v.data(), env);
  };
  const Result<Config> config = load(argv);
  if (!config) {
    FUZZ_CHECK(!config.error().message.empty());
    return;
  }
  // Whatever loaded loads again to the same settings.
  const Result<Config> again = load(argv);
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(again->store == config->store && again->http_port == config->http_port &&
             again->max_step == config->max_step && again->tokens_file == config->tokens_file);
  FUZZ_CHECK(config->snowflake_time_bits + config->snowflake_worker_bits +
                 config->snowflake_sequence_bits <=
             63);
  // The store setting is a spec the stores accept (or will refuse cleanly,
  // without echoing a password).
  const Result<StoreSpec> spec = ParseStoreSpec(config->store, /*allow_memory=*/true);
  if (!spec) {
    FUZZ_CHECK(!ShowsPassword(config->store, [](std::string_view url) {
      auto s = ParseStoreSpec(url, true);
      return s.ok() ? std::string() : s.error().message;
    }));
  }
  // --print-config never shows the store URL's password.
  FUZZ_CHECK(!ShowsPassword(config->store, [&](std::string_view url) {
    Config with_url = *config;
    with_url.store = std::string(url);
    return PrintConfig(with_url);
  }));
}

void StoreUrl(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const auto spec_error = [](std::string_view url) {
    auto s = ParseStoreSpec(url, /*allow_memory=*/true);
    return s.ok() ? std::string() : s.error().message;
  };
  for (const bool allow_memory : {false, true}) {
    const Result<StoreSpec> spec = ParseStoreSpec(text, allow_memory);
    if (!spec) {
      FUZZ_CHECK(spec.error().code == ErrorCode::kInvalidArgument);
      continue;
    }
    if (spec->kind == StoreKind::kSqlite) FUZZ_CHECK(!spec->sqlite_path.empty());
    if (spec->kind == StoreKind::kMemory) FUZZ_CHECK(allow_memory && text == "memory:");
  }
  // An error never shows the password (neither does the loggable
  // description of what parsed).
  FUZZ_CHECK(!ShowsPassword(text, spec_error));
  const auto url_error = [](std::string_view url) {
    auto o = MysqlStore::ParseUrl(url);
    return o.ok() ? DescribeMysql(*o) : o.error().message;
  };
  FUZZ_CHECK(!ShowsPassword(text, url_error));

  const Result<MysqlOptions> options = MysqlStore::ParseUrl(text);
  if (!options) return;
  FUZZ_CHECK(!options->user.empty() && !options->database.empty());
  FUZZ_CHECK(!options->hosts.empty() && options->hosts.size() <= MysqlOptions::kMaxHosts);
  for (size_t i = 0; i < options->hosts.size(); ++i) {
    const MysqlHost& h = options->hosts[i];
    FUZZ_CHECK(!h.host.empty() && h.host.find(',') == std::string::npos);
    FUZZ_CHECK(h.port >= 1 && h.port <= 65535);
    for (size_t j = 0; j < i; ++j) FUZZ_CHECK(!(options->hosts[j] == h));
  }
  FUZZ_CHECK(options->database.find('/') == std::string::npos);
}

void Tokens(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // The whole input as a tokens file.
  if (const auto tokens = ParseTokens(text); tokens.ok()) {
    std::string written;
    for (const Principal& p : *tokens) {
      FUZZ_CHECK(ValidTokenId(p.id));
      FUZZ_CHECK(!p.scopes.empty());
      FUZZ_CHECK(!p.open);
      written += p.id + " " + DigestHex(p.digest) + " " + ScopesText(p.scopes) + "\n";
    }
    const auto back = ParseTokens(written);
    FUZZ_CHECK(back.ok() && back->size() == tokens->size());
    for (size_t i = 0; i < back->size(); ++i) {
      FUZZ_CHECK((*back)[i].id == (*tokens)[i].id);
      FUZZ_CHECK((*back)[i].digest == (*tokens)[i].digest);
      FUZZ_CHECK((*back)[i].scopes == (*tokens)[i].scopes);
    }
  } else {
    FUZZ_CHECK(tokens.error().message.starts_with("tokens file line "));
  }
  // Each line as a scope list.
  for (std::string_view line : SplitLines(text.substr(0, 4096))) {
    const auto scopes = ParseScopes(line);
    if (!scopes) continue;
    FUZZ_CHECK(!scopes->empty());
    const auto back = ParseScopes(ScopesText(*scopes));
    FUZZ_CHECK(back.ok() && *back == *scopes);
    for (const Scope& s : *scopes) {
      // A keyed scope's prefix allows its keys and nothing shorter.
      if (s.all_keys) continue;
      FUZZ_CHECK(!s.prefix.empty());
      FUZZ_CHECK(Allows(*scopes, s.permission, s.prefix + "x"));
    }
  }
}

}  // namespace seqd::fuzz
