#include "SingleFlight.h"

#include <unistd.h>

#include <algorithm>
#include <random>
#include <thread>

namespace fusegen::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Polls start fast (a compile that is nearly done) and back off to a cap
// that keeps a thousand waiters at a few thousand commands a second; the
// jitter spreads waiters that started together.
constexpr std::chrono::milliseconds kFirstPoll{5};
constexpr std::chrono::milliseconds kMaxPoll{100};

std::chrono::milliseconds jittered(std::chrono::milliseconds poll) {
  static thread_local std::minstd_rand engine(static_cast<unsigned>(std::random_device{}() ^ ::getpid()));
  std::uniform_int_distribution<long> spread(poll.count() / 2, poll.count());
  return std::chrono::milliseconds(spread(engine));
}

} // namespace

FleetAnswer fetch_or_claim(RemoteCache& remote, const CacheKey& key) {
  FleetAnswer answer;
  const Clock::time_point deadline = Clock::now() + remote.settings().wait;
  std::chrono::milliseconds poll = kFirstPoll;
  while (true) {
    RemoteCache::Fetched fetched = remote.fetch(key);
    if (fetched.status == RemoteCache::Lookup::Hit) {
      answer.entry = std::move(fetched.entry);
      return answer;
    }
    if (fetched.status == RemoteCache::Lookup::Unavailable)
      return answer;
    if (fetched.status == RemoteCache::Lookup::Bad)
      answer.problem = fetched.problem; // claimed below all the same: one process replaces it
    std::string token;
    RemoteCache::Claim claim = remote.claim(key, token);
    if (claim == RemoteCache::Claim::Won) {
      // The previous holder may have published and released between our
      // fetch and our claim: look once more before compiling.
      RemoteCache::Fetched again = remote.fetch(key);
      if (again.status == RemoteCache::Lookup::Hit) {
        remote.release(key, token);
        answer.entry = std::move(again.entry);
        return answer;
      }
      answer.token = std::move(token);
      return answer;
    }
    if (claim == RemoteCache::Claim::Unavailable || !answer.problem.empty())
      return answer;
    const Clock::time_point now = Clock::now();
    if (now >= deadline)
      return answer;
    answer.waited = true;
    std::this_thread::sleep_for(std::min<Clock::duration>(jittered(poll), deadline - now));
    poll = std::min(poll * 2, kMaxPoll);
  }
}

} // namespace fusegen::runtime
