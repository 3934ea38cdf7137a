// ThreadPool: exact coverage by contiguous ranges, inline single-thread mode, exceptions, nesting.
#include <algorithm>
#include <atomic>
#include <mutex>
#include <set>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "catch.hpp"
#include "core/base/error.h"
#include "core/runtime/thread_pool.h"

using strata::core::ThreadPool;

namespace {

// Every (begin, end) the pool handed out, in the order ranges finished.
std::vector<std::pair<int64_t, int64_t>> collect_ranges(ThreadPool& pool, int64_t n) {
  std::mutex m;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  pool.parallel_for(n, [&](int64_t b, int64_t e) {
    std::lock_guard lock(m);
    ranges.emplace_back(b, e);
  });
  std::sort(ranges.begin(), ranges.end());
  return ranges;
}

}  // namespace

TEST_CASE("parallel_for covers 0 .. n-1 with min(n, threads) contiguous non-empty ranges") {
  for (int spin_us : {0, 300}) {
    for (int threads : {1, 2, 3, 5}) {
      ThreadPool pool(threads, spin_us);
      for (int64_t n : {1, 2, 3, 4, 7, 100, 1001}) {
        INFO("spin_us=" << spin_us << " threads=" << threads << " n=" << n);
        auto ranges = collect_ranges(pool, n);
        REQUIRE(ranges.size() == static_cast<size_t>(std::min<int64_t>(n, threads)));
        int64_t expect_begin = 0, smallest = n, largest = 0;
        for (auto [b, e] : ranges) {
          CHECK(b == expect_begin);
          CHECK(e > b);
          smallest = std::min(smallest, e - b);
          largest = std::max(largest, e - b);
          expect_begin = e;
        }
        CHECK(expect_begin == n);
        CHECK(largest - smallest <= 1);  // balanced split
      }
    }
  }
}

TEST_CASE("parallel_for with n <= 0 calls nothing") {
  ThreadPool pool(3);
  int calls = 0;
  pool.parallel_for(0, [&](int64_t, int64_t) { ++calls; });
  pool.parallel_for(-5, [&](int64_t, int64_t) { ++calls; });
  CHECK(calls == 0);
}

TEST_CASE("one thread runs inline on the caller, and N threads use N distinct threads") {
  const auto caller = std::this_thread::get_id();
  ThreadPool one(1);
  one.parallel_for(10, [&](int64_t b, int64_t e) {
    CHECK(std::this_thread::get_id() == caller);
    CHECK(b == 0);
    CHECK(e == 10);
  });

  ThreadPool three(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  three.parallel_for(3, [&](int64_t, int64_t) {
    std::lock_guard lock(m);
    ids.insert(std::this_thread::get_id());
  });
  CHECK(ids.size() == 3);
  CHECK(ids.count(caller) == 1);  // range 0 runs on the caller
}

TEST_CASE("an exception in a range reaches the caller and the pool stays usable") {
  ThreadPool pool(3);
  // Ranges of 9 over 3 threads: [0,3) [3,6) [6,9). Ranges 1 and 2 throw; range 1's wins.
  try {
    pool.parallel_for(9, [&](int64_t b, int64_t) {
      if (b == 3) throw std::runtime_error("range 1");
      if (b == 6) throw std::runtime_error("range 2");
    });
    FAIL("no exception");
  } catch (const std::runtime_error& e) {
    CHECK(std::string(e.what()) == "range 1");
  }
  // The caller's own range throwing is rethrown too.
  CHECK_THROWS_WITH(pool.parallel_for(9, [&](int64_t b, int64_t) {
                      if (b == 0) throw std::runtime_error("range 0");
                    }),
                    "range 0");
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  CHECK(sum == 4950);
}

TEST_CASE("nested parallel_for runs inline instead of deadlocking") {
  for (int spin_us : {0, 200}) {
    ThreadPool pool(2, spin_us);
    // Catch2 assertions are not thread-safe: record in the ranges, check after.
    std::vector<int> hits(6 * 5, 0), inner_calls(6, 0);
    pool.parallel_for(6, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) {
        pool.parallel_for(5, [&](int64_t b2, int64_t e2) {
          inner_calls[i] += 1;  // inline: one range over everything
          for (int64_t j = b2; j < e2; ++j) hits[i * 5 + j] += 1;
        });
      }
    });
    for (int h : hits) CHECK(h == 1);
    for (int c : inner_calls) CHECK(c == 1);
  }
}

TEST_CASE("parallel_for from several caller threads at once") {
  for (int spin_us : {0, 200}) {
    ThreadPool pool(3, spin_us);
    std::vector<int64_t> out_a(500, -1), out_b(500, -1);
    auto fill = [&](std::vector<int64_t>& out, int64_t mul) {
      for (int rep = 0; rep < 50; ++rep) {
        pool.parallel_for(static_cast<int64_t>(out.size()), [&](int64_t b, int64_t e) {
          for (int64_t i = b; i < e; ++i) out[i] = i * mul + rep;
        });
      }
    };
    std::thread ta([&] { fill(out_a, 2); });
    std::thread tb([&] { fill(out_b, 3); });
    ta.join();
    tb.join();
    for (int64_t i = 0; i < 500; ++i) {
      CHECK(out_a[i] == i * 2 + 49);
      CHECK(out_b[i] == i * 3 + 49);
    }
  }
}

TEST_CASE("parallel_for without a pool runs one range on the caller") {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  strata::core::parallel_for(nullptr, 9, [&](int64_t b, int64_t e) { ranges.emplace_back(b, e); });
  CHECK(ranges == std::vector<std::pair<int64_t, int64_t>>{{0, 9}});
  strata::core::parallel_for(nullptr, 0, [&](int64_t b, int64_t e) { ranges.emplace_back(b, e); });
  CHECK(ranges.size() == 1);
  ThreadPool pool(2);
  ranges.clear();
  std::mutex m;
  strata::core::parallel_for(&pool, 9, [&](int64_t b, int64_t e) {
    std::lock_guard lock(m);
    ranges.emplace_back(b, e);
  });
  CHECK(ranges.size() == 2);
}

TEST_CASE("ThreadPool rejects n_threads < 1 and a negative spin") {
  CHECK_THROWS_AS(ThreadPool(0), strata::core::Error);
  CHECK_THROWS_AS(ThreadPool(-2), strata::core::Error);
  CHECK_THROWS_AS(ThreadPool(2, -1), strata::core::Error);
}

// Back-to-back jobs of alternating size: workers that sit a job out (n below
// the thread count) must not take part in the next one early or late, whether
// they poll (spinning) or sleep between jobs; exceptions still arrive.
TEST_CASE("spinning and sleeping pools run thousands of short jobs exactly") {
  for (int spin_us : {0, 50, 2000}) {
    ThreadPool pool(4, spin_us);
    std::vector<int> hits(7, 0);
    int64_t wrong = 0;
    for (int rep = 0; rep < 3000; ++rep) {
      const int64_t n = rep % 3 == 0 ? 1 : rep % 3 == 1 ? 7 : 3;
      std::fill(hits.begin(), hits.end(), 0);
      pool.parallel_for(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i] += 1;
      });
      for (int64_t i = 0; i < 7; ++i) wrong += hits[i] == (i < n ? 1 : 0) ? 0 : 1;
      if (rep % 500 == 7)
        CHECK_THROWS_WITH(pool.parallel_for(4, [](int64_t b, int64_t) {
                            if (b == 3) throw std::runtime_error("last");
                          }),
                          "last");
    }
    INFO("spin_us=" << spin_us);
    CHECK(wrong == 0);  // elements run other than once (or run outside [0, n))
  }
}
