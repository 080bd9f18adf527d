// The fusegen command line, parsed with CLI11: each command's options into
// its Args (Commands.h), and a bad command line's errors in fusegen's words.
#pragma once

#include <string>
#include <vector>

namespace fusegen::cli {

// Parses `args` (argv without the program name), runs the command they name
// and returns the process exit code (kExit* in Commands.h).
int run_command_line(std::vector<std::string> args);

// The candidate closest to a misspelt `word` (at most two edits, and fewer
// than its length), or "" where none is: "dimz" -> "dims".
std::string closest_name(const std::string& word, const std::vector<std::string>& candidates);

} // namespace fusegen::cli
