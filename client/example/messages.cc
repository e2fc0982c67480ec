// Sends, pulls and subscribes with the blocking client API: subscribes to a
// conversation, sends one message per TEXT, waits until each has come back
// as a push, then pulls the conversation from the first seq it sent.
//   seqd-messages-example [--endpoints HOST:PORT[,HOST:PORT...]] [--conv CONV] [TEXT...]
// Prints "sent", "pushed" and "pulled" lines: seq and text of each message.
// Exit status: 0 when every message sent came back as a push and in the
// pull, 1 otherwise, 2 on a usage error.
#include <seqd/client.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

namespace {

// Pushes as the client's I/O thread delivers them.
struct Inbox {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<seqd::client::Message> messages;  // guarded by mu

  void Add(seqd::client::Message m) {
    std::lock_guard<std::mutex> lock(mu);
    messages.push_back(std::move(m));
    cv.notify_all();
  }
  // The pushes received once `n` have come, or all by the deadline.
  std::vector<seqd::client::Message> WaitFor(size_t n, std::chrono::milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu);
    cv.wait_for(lock, timeout, [&] { return messages.size() >= n; });
    return messages;
  }
};

// The command line: where to connect, the conversation, the texts to send.
struct Args {
  std::string endpoints = "127.0.0.1:7070";
  std::string conv = "sg_example";  // sg_ conversations are created on first use
  std::vector<std::string> texts;
};

// Fills `args`; returns -1 to go on, else the exit status (after --help: 0,
// a bad argument: 2).
int ParseArgs(int argc, char** argv, Args& args) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << "usage: seqd-messages-example [--endpoints HOST:PORT[,HOST:PORT...]] "
                   "[--conv CONV] [TEXT...]\n"
                   "Subscribes to CONV (default sg_example), sends each TEXT (default: hello "
                   "world) as a message,\nwaits for their pushes, then pulls them back.\n";
      return 0;
    } else if (a == "--endpoints" && i + 1 < argc) {
      args.endpoints = argv[++i];
    } else if (a == "--conv" && i + 1 < argc) {
      args.conv = argv[++i];
    } else if (a.starts_with("--")) {
      std::cerr << "unexpected argument " << a << "\n";
      return 2;
    } else {
      args.texts.push_back(a);
    }
  }
  if (args.texts.empty()) args.texts = {"hello", "world"};
  return -1;
}

seqd::client::ClientOptions Options(const std::string& endpoints) {
  seqd::client::ClientOptions options;
  std::stringstream ss(endpoints);
  for (std::string ep; std::getline(ss, ep, ',');) options.endpoints.push_back(ep);
  options.max_attempts = 2;
  options.backoff_initial = std::chrono::milliseconds(10);
  return options;
}

// Sends each text as a message of `conv`; the seq of the first, or 0 (and
// a line on stderr) if a send failed.
int64_t SendAll(seqd::client::Client& client, const std::string& conv,
                const std::vector<std::string>& texts) {
  // One client_msg_id per message: a retried Send with the same id is stored once.
  const std::string run = std::to_string(getpid()) + "-" +
                          std::to_string(std::chrono::system_clock::now().time_since_epoch() /
                                         std::chrono::milliseconds(1));
  int64_t first_seq = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    seqd::client::OutgoingMessage m{conv, "example", "example-" + run + "-" + std::to_string(i),
                                    /*content_type=*/1, texts[i]};
    auto sent = client.Send(m);
    if (!sent) {
      std::cerr << "seqd-messages-example: send: " << sent.ToString() << "\n";
      return 0;
    }
    if (i == 0) first_seq = sent->seq;
    std::cout << "sent seq=" << sent->seq << ": " << texts[i] << "\n";
  }
  return first_seq;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (const int status = ParseArgs(argc, argv, args); status >= 0) return status;
  const std::string& conv = args.conv;
  const std::vector<std::string>& texts = args.texts;

  Inbox inbox;  // declared first: the client's callbacks use it until the client is gone
  seqd::client::Client client(Options(args.endpoints));

  // Subscribe first: every message above the conversation's max seq at this
  // point is pushed, in seq order, exactly once.
  auto subscribed = client.Subscribe(
      {conv}, [&inbox](seqd::client::Message m) { inbox.Add(std::move(m)); },
      [](std::vector<std::string>, std::string reason) {
        std::cerr << "pushes interrupted: " << reason << " (the client resubscribes)\n";
      });
  if (!subscribed) {
    std::cerr << "seqd-messages-example: subscribe: " << subscribed.ToString() << "\n";
    return 1;
  }

  const int64_t first_seq = SendAll(client, conv, texts);
  if (first_seq == 0) return 1;

  const auto pushed = inbox.WaitFor(texts.size(), std::chrono::seconds(10));
  for (const auto& m : pushed) std::cout << "pushed seq=" << m.seq << ": " << m.payload << "\n";

  seqd::client::PullOptions pull;
  pull.from_seq = first_seq;
  auto page = client.PullRange(conv, pull);
  if (!page) {
    std::cerr << "seqd-messages-example: pull: " << page.ToString() << "\n";
    return 1;
  }
  for (const auto& m : page->messages) {
    std::cout << "pulled seq=" << m.seq << ": " << m.payload << "\n";
  }
  client.Unsubscribe({conv});

  if (pushed.size() < texts.size() || page->messages.size() < texts.size()) {
    std::cerr << "seqd-messages-example: " << texts.size() << " sent, " << pushed.size()
              << " pushed, " << page->messages.size() << " pulled\n";
    return 1;
  }
  return 0;
}
