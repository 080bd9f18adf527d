// A value or an error message: how library code reports failures (bad call
// arguments, I/O, what planning or generation refuses). Errors of the front
// end go through Diagnostics instead; an Error from after it may carry the
// spec location of what it is about (the op a generated kernel refused).
#pragma once

#include "fusegen/Diagnostics.h"

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace fusegen {

struct Error {
  std::string message;
  SourceLoc loc = {}; // where in the spec, when known
};

template <class T> class [[nodiscard]] Result {
public:
  Result(T value) : state_(std::move(value)) {}
  Result(Error error) : state_(std::move(error)) {}

  bool ok() const { return state_.index() == 0; }
  explicit operator bool() const { return ok(); }

  T& value() & {
    assert(ok());
    return std::get<0>(state_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<0>(state_);
  }
  T&& value() && {
    assert(ok());
    return std::get<0>(std::move(state_));
  }
  const std::string& error() const {
    assert(!ok());
    return std::get<1>(state_).message;
  }
  const SourceLoc& error_loc() const {
    assert(!ok());
    return std::get<1>(state_).loc;
  }

private:
  std::variant<T, Error> state_;
};

// Result<void> equivalent.
class [[nodiscard]] Status {
public:
  Status() = default;
  Status(Error error) : error_(std::move(error.message)), ok_(false) {}
  static Status success() { return {}; }

  bool ok() const { return ok_; }
  explicit operator bool() const { return ok_; }
  const std::string& error() const { return error_; }

private:
  std::string error_;
  bool ok_ = true;
};

} // namespace fusegen
