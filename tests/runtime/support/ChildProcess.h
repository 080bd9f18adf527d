// A child process for the multi-process tests (disk and remote cache load):
// started with fork and execve, its stdout and stderr collected together.
#pragma once

#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

extern char** environ;

namespace fusegen::testing {

// A child process's exit and output (stdout and stderr together).
struct ChildResult {
  int exit_code = -1; // -1 when killed by a signal
  int signal = 0;
  std::string output;
  std::string describe() const {
    return (signal ? "killed by signal " + std::to_string(signal) : "exit " + std::to_string(exit_code)) + ":\n" +
           output;
  }
};

// Starts `argv` with `extra_env` added to this environment. `setup` runs in
// the child between fork and exec, so it may only make async-signal-safe
// calls (setrlimit, signal, setuid...). A child still running after
// `seconds` is killed by SIGALRM (an alarm survives exec).
class Child {
public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env = {},
        const std::function<void()>& setup = {}, unsigned seconds = 120) {
    std::vector<std::string> env = extra_env;
    // The children choose their own cache directories (FUSEGEN_CACHE* is
    // dropped; FUSEGEN_CACHE_KEY_FILE too, given in `extra_env` when wanted).
    for (char** e = environ; *e; ++e)
      if (std::strncmp(*e, "FUSEGEN_CACHE=", 14) != 0 && std::strncmp(*e, "FUSEGEN_CACHE_DIR=", 18) != 0 &&
          std::strncmp(*e, "FUSEGEN_CACHE_KEY_FILE=", 23) != 0 && std::strncmp(*e, "FUSEGEN_REMOTE_CACHE", 20) != 0)
        env.emplace_back(*e);
    std::vector<char*> argv_c, env_c;
    for (const std::string& a : argv)
      argv_c.push_back(const_cast<char*>(a.c_str()));
    argv_c.push_back(nullptr);
    for (const std::string& e : env)
      env_c.push_back(const_cast<char*>(e.c_str()));
    env_c.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      ADD_FAILURE() << "pipe failed";
      return;
    }
    pid_ = fork();
    if (pid_ == 0) {
      dup2(fds[1], 1);
      dup2(fds[1], 2);
      if (setup)
        setup();
      alarm(seconds);
      execve(argv_c[0], argv_c.data(), env_c.data());
      _exit(127);
    }
    close(fds[1]);
    out_ = fds[0];
    if (pid_ < 0)
      ADD_FAILURE() << "fork failed";
  }
  ~Child() {
    if (pid_ > 0)
      wait();
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  void kill(int signal) {
    if (pid_ > 0)
      ::kill(pid_, signal);
  }

  ChildResult wait() {
    ChildResult result;
    char buffer[4096];
    ssize_t n = 0;
    while (out_ >= 0 && ((n = read(out_, buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)))
      if (n > 0)
        result.output.append(buffer, static_cast<size_t>(n));
    if (out_ >= 0)
      close(out_);
    out_ = -1;
    int status = 0;
    if (pid_ > 0 && waitpid(pid_, &status, 0) == pid_) {
      if (WIFEXITED(status))
        result.exit_code = WEXITSTATUS(status);
      else if (WIFSIGNALED(status))
        result.signal = WTERMSIG(status);
    }
    pid_ = -1;
    return result;
  }

private:
  pid_t pid_ = -1;
  int out_ = -1;
};

} // namespace fusegen::testing
