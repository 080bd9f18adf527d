// A map whose values are built on first use, exactly once even when several
// threads ask for one key at the same time (the others wait for that build);
// different keys build in parallel, and no lock is held while building or
// after the value exists. A failed build is not remembered: its waiters get
// the exception and a later request builds again.
#pragma once

#include <exception>
#include <future>
#include <map>
#include <mutex>
#include <utility>

namespace fusegen::runtime {

template <class Key, class Value> class OnceCache {
public:
  // The value for `key` and whether this call built it (with `build()`).
  template <class Build> std::pair<Value, bool> get(const Key& key, Build&& build) {
    std::shared_future<Value> existing;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end())
        existing = it->second;
    }
    if (existing.valid())
      return {existing.get(), false}; // waits while another thread builds it
    // Not there: a promise (an allocation) only now, and only if no other
    // thread got in first.
    std::promise<Value> promise;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto [it, inserted] = entries_.emplace(key, std::shared_future<Value>());
      if (!inserted)
        existing = it->second;
      else
        it->second = promise.get_future().share();
    }
    if (existing.valid())
      return {existing.get(), false};
    try {
      Value value = build();
      promise.set_value(value);
      return {std::move(value), true};
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::lock_guard<std::mutex> lock(mutex_);
      entries_.erase(key);
      throw;
    }
  }

  void clear() {
    std::map<Key, std::shared_future<Value>> doomed;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      doomed.swap(entries_);
    }
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

private:
  mutable std::mutex mutex_;
  std::map<Key, std::shared_future<Value>> entries_;
};

} // namespace fusegen::runtime
