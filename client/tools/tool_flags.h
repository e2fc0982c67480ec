// What seqctl and seqbench (bench/seqbench) both read their command lines
// with: the usage error they exit 2 on, and a walk over the words that
// takes a flag's value inline ("--flag=value") or from the next word.
#pragma once

#include <optional>
#include <string>

namespace seqd::tools {

// A bad command line: the tool prints the message and exits 2.
struct UsageError {
  std::string message;
};

// The words of a command line after the program's name, one at a time.
// A word "--flag=value" is the flag "--flag" with its value inline; any
// other word is itself, and Value() takes the next word as its value.
class FlagReader {
 public:
  FlagReader(int argc, char** argv) : argc_(argc), argv_(argv) {}

  // Moves to the next word; false once past the last.
  bool Next() {
    if (++at_ >= argc_) return false;
    word_ = argv_[at_];
    inline_value_.reset();
    if (const size_t eq = word_.find('='); word_.rfind("--", 0) == 0 && eq != std::string::npos) {
      inline_value_ = word_.substr(eq + 1);
      word_.resize(eq);
    }
    return true;
  }

  // The word without its inline value: a flag's name, or an argument.
  const std::string& flag() const { return word_; }
  // The word exactly as given.
  const char* word() const { return argv_[at_]; }

  // The flag's value: the inline one, else the next word (which is then
  // used up). UsageError "<flag> needs a value" after the last word.
  std::string Value() {
    if (inline_value_) return *inline_value_;
    if (at_ + 1 >= argc_) throw UsageError{word_ + " needs a value"};
    return argv_[++at_];
  }

 private:
  int argc_;
  char** argv_;
  int at_ = 0;  // argv_[0] is the program
  std::string word_;
  std::optional<std::string> inline_value_;
};

}  // namespace seqd::tools
