// Polling before sleeping: the waits of ThreadPool and Background.
#pragma once

#include <chrono>
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace strata::core {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Polls pred() for up to spin_us microseconds (once when 0); whether it became true.
template <class Pred>
bool spin_for(int spin_us, Pred pred) {
  if (spin_us == 0) return pred();
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us);
  for (;;) {
    for (int i = 0; i < 64; ++i) {
      if (pred()) return true;
      cpu_relax();
    }
    if (std::chrono::steady_clock::now() >= until) return pred();
  }
}

}  // namespace strata::core
