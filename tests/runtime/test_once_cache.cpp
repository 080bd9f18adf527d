// The in-memory cache's concurrency contract (OnceCache): one build per key
// however many threads ask at once, different keys in parallel, failures
// not remembered.
#include "OnceCache.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <stdexcept>
#include <thread>
#include <vector>

namespace fusegen::runtime {
namespace {

using namespace std::chrono_literals;

TEST(OnceCache, ConcurrentRequestsForOneKeyBuildOnce) {
  OnceCache<int, int> cache;
  std::atomic<int> builds{0}, built_here{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 16; ++i)
    threads.emplace_back([&] {
      auto [value, built] = cache.get(7, [&] {
        ++builds;
        std::this_thread::sleep_for(50ms); // the others arrive meanwhile
        return 49;
      });
      EXPECT_EQ(value, 49);
      built_here += built ? 1 : 0;
    });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(builds, 1);
  EXPECT_EQ(built_here, 1);
  EXPECT_EQ(cache.get(7, [] { return 0; }).first, 49);
}

TEST(OnceCache, DifferentKeysBuildInParallel) {
  OnceCache<int, int> cache;
  constexpr int kKeys = 4;
  std::mutex mutex;
  std::condition_variable all_inside;
  int inside = 0;
  std::atomic<int> saw_all{0};
  std::vector<std::thread> threads;
  for (int k = 0; k < kKeys; ++k)
    threads.emplace_back([&, k] {
      cache.get(k, [&] {
        std::unique_lock<std::mutex> lock(mutex);
        ++inside;
        all_inside.notify_all();
        // Only possible if the builds of all keys overlap.
        if (all_inside.wait_for(lock, 10s, [&] { return inside == kKeys; }))
          ++saw_all;
        return k;
      });
    });
  for (std::thread& t : threads)
    t.join();
  EXPECT_EQ(saw_all, kKeys);
  EXPECT_EQ(cache.size(), static_cast<size_t>(kKeys));
}

TEST(OnceCache, FailuresReachWaitersAndAreNotRemembered) {
  OnceCache<int, int> cache;
  std::atomic<int> errors{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      try {
        cache.get(1, [&]() -> int {
          std::this_thread::sleep_for(30ms);
          throw std::runtime_error("no");
        });
      } catch (const std::runtime_error& error) {
        EXPECT_STREQ(error.what(), "no");
        ++errors;
      }
    });
  for (std::thread& t : threads)
    t.join();
  // Every thread saw an error; threads arriving after the failure built again (and failed).
  EXPECT_EQ(errors, 8);
  EXPECT_EQ(cache.size(), 0u);
  auto [value, built] = cache.get(1, [] { return 5; });
  EXPECT_EQ(value, 5);
  EXPECT_TRUE(built);
}

} // namespace
} // namespace fusegen::runtime
