// `seqctl token new`: a fresh token secret and its line for seqd's tokens
// file, made and checked exactly as the server does (common/).
#include <iostream>

#include "common/scopes.h"
#include "common/token_digest.h"
#include "seqctl.h"
#include "tool_args.h"

namespace seqd::tools {

int NewToken(const Args& args) {
  Need(args, 1, 1, "token new --id ID --scopes S[,S...]");
  if (args.positional[1] != "new") throw UsageError{"usage: seqctl token new --id ID --scopes S"};
  if (!args.token_id || !args.token_scopes) {
    throw UsageError{"token new needs --id ID and --scopes S[,S...]"};
  }
  // The same checks as the server's tokens file.
  if (!seqd::ValidTokenId(*args.token_id)) {
    throw UsageError{"--id must be 1-64 of A-Z a-z 0-9 _ . -"};
  }
  if (auto scopes = seqd::ParseScopes(*args.token_scopes); !scopes) {
    throw UsageError{"--scopes: " + scopes.error().message};
  }
  const std::string secret = seqd::NewTokenSecret();
  const std::string line =
      *args.token_id + " " + seqd::DigestHex(seqd::Sha256(secret)) + " " + *args.token_scopes;
  if (args.json) {
    std::cout << Json{{"id", *args.token_id}, {"secret", secret}, {"line", line}}.dump() << "\n";
  } else {
    std::cout << "secret (shown once; give it to the client, e.g. SEQD_TOKEN):\n  " << secret
              << "\nline for the tokens file (then SIGHUP seqd):\n  " << line << "\n";
  }
  return 0;
}

}  // namespace seqd::tools
