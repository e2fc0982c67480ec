#include "server/auth/authenticator.h"

#include <fstream>
#include <set>
#include <sstream>

namespace seqd {
namespace {

constexpr size_t kMaxTokensFileBytes = 4 << 20;

// The whitespace-separated fields of `line` (after any comment).
std::vector<std::string_view> Fields(std::string_view line) {
  if (size_t hash = line.find('#'); hash != std::string_view::npos) line = line.substr(0, hash);
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t' && line[j] != '\r') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

Error LineError(size_t line, const std::string& what) {
  return MakeError(ErrorCode::kInvalidArgument,
                   "tokens file line " + std::to_string(line) + ": " + what);
}

}  // namespace

Result<std::vector<Principal>> ParseTokens(std::string_view text) {
  std::vector<Principal> out;
  std::set<std::string> ids;
  std::set<TokenDigest> digests;
  size_t number = 0;
  while (!text.empty()) {
    ++number;
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const std::vector<std::string_view> f = Fields(line);
    if (f.empty()) continue;
    if (f.size() != 3) return LineError(number, "expected ID SHA256HEX SCOPE[,SCOPE...]");
    Principal p;
    if (!ValidTokenId(f[0])) return LineError(number, "the id must be 1-64 of A-Z a-z 0-9 _ . -");
    p.id = std::string(f[0]);
    auto digest = ParseDigestHex(f[1]);
    if (!digest) {
      return LineError(number, "the second field must be the secret's SHA-256, 64 hex digits");
    }
    p.digest = *digest;
    auto scopes = ParseScopes(f[2]);
    if (!scopes) return LineError(number, scopes.error().message);
    p.scopes = std::move(scopes).value();
    if (!ids.insert(p.id).second) return LineError(number, "id " + p.id + " appears twice");
    if (!digests.insert(p.digest).second) {
      return LineError(number, "this secret's digest appears twice");
    }
    out.push_back(std::move(p));
  }
  return out;
}

Authenticator::Authenticator()
    : set_(std::make_shared<const Set>()),
      open_(std::make_shared<const Principal>(Principal{"-", {}, {}, true})) {}

Result<std::unique_ptr<Authenticator>> Authenticator::FromFile(std::string path) {
  if (path.empty()) return MakeError(ErrorCode::kInvalidArgument, "tokens file: empty path");
  std::unique_ptr<Authenticator> a(new Authenticator());
  const_cast<std::string&>(a->path_) = std::move(path);
  a->open_ = nullptr;
  if (Status s = a->Reload(); !s) return s.error();
  return a;
}

Status Authenticator::Reload() {
  if (!enabled()) return OkStatus();
  std::ifstream in(path_, std::ios::binary);
  if (!in) return MakeError(ErrorCode::kInvalidArgument, "cannot read tokens file " + path_);
  // Read in small chunks: a buffer of the 4 MiB limit, zero-filled at every
  // SIGHUP, stayed resident in each database thread's malloc arena (the soak
  // test saw RSS grow about 4 MiB per reload).
  std::string text;
  char chunk[16 * 1024];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxTokensFileBytes) {
      return MakeError(ErrorCode::kInvalidArgument, "tokens file " + path_ + " is over 4 MiB");
    }
  }
  auto parsed = ParseTokens(text);
  if (!parsed) {
    return MakeError(ErrorCode::kInvalidArgument, path_ + ": " + parsed.error().message);
  }
  auto next = std::make_shared<Set>();
  for (Principal& p : *parsed) next->push_back(std::make_shared<const Principal>(std::move(p)));
  {
    MutexLock lock(mu_);
    set_ = std::move(next);
    generation_.fetch_add(1, std::memory_order_release);
  }
  std::vector<std::shared_ptr<const std::function<void()>>> watches;
  {
    MutexLock lock(watch_mu_);
    for (const auto& [id, fn] : watches_) watches.push_back(fn);
  }
  for (const auto& fn : watches) (*fn)();
  return OkStatus();
}

std::unique_ptr<Authenticator::ReloadWatch> Authenticator::OnReload(
    std::function<void()> fn) const {
  MutexLock lock(watch_mu_);
  const uint64_t id = ++next_watch_;
  watches_.emplace(id, std::make_shared<const std::function<void()>>(std::move(fn)));
  return std::make_unique<ReloadWatch>(this, id);
}

Authenticator::ReloadWatch::~ReloadWatch() {
  MutexLock lock(auth_->watch_mu_);
  auth_->watches_.erase(id_);
}

std::shared_ptr<const Authenticator::Set> Authenticator::set() const {
  MutexLock lock(mu_);
  return set_;
}

size_t Authenticator::size() const { return set()->size(); }

std::shared_ptr<const Principal> Authenticator::Authenticate(std::string_view secret) const {
  if (!enabled()) return open_;
  if (secret.empty()) return nullptr;
  const TokenDigest d = Sha256(secret);
  std::shared_ptr<const Principal> found;
  for (const auto& p : *set()) {  // no early exit: the time does not tell which token matched
    if (DigestsEqual(p->digest, d)) found = p;
  }
  return found;
}

std::shared_ptr<const Principal> Authenticator::Current(
    const std::shared_ptr<const Principal>& p) const {
  if (!p || p->open || !enabled()) return p;
  const auto now = set();
  for (const auto& q : *now) {
    if (q == p) return p;
  }
  for (const auto& q : *now) {
    if (DigestsEqual(q->digest, p->digest)) return q;
  }
  return nullptr;
}

std::shared_ptr<const Principal> Authenticator::Anonymous() const { return open_; }

}  // namespace seqd
