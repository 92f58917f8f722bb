// The command-line conventions every cxxgraph tool follows, in one place so
// graph-inspect, graph-run and graph-codegen cannot drift apart:
//   -h / --help   usage on stdout, exit status 0
//   --version     "<tool> <version>" on stdout, exit status 0
//   a bad option  one line on stderr ("<tool>: <what>; <tool> --help shows
//                 the usage"), exit status 2, so scripts can tell a misuse (2)
//                 from a failure (1) and a log stays readable.
#pragma once

#include <iostream>
#include <optional>
#include <string>
#include <string_view>

#ifndef CXXGRAPH_VERSION
#error "CXXGRAPH_VERSION must be defined by the build (tools/CMakeLists.txt)"
#endif

namespace graph::cli {

inline constexpr int kUsageExit = 2;

// Answers --help and --version wherever they appear among the arguments (a
// help request wins over anything else on the line). Returns the exit status
// when one was answered, nullopt when the tool should parse its arguments.
inline std::optional<int> answer_help_or_version(int argc, char** argv, std::string_view tool,
                                                 std::string_view usage) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "-h" || a == "--help") {
      std::cout << usage;
      return 0;
    }
  }
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--version") {
      std::cout << tool << " " << CXXGRAPH_VERSION << "\n";
      return 0;
    }
  return std::nullopt;
}

// The one-line report of a command-line mistake; returns the exit status.
inline int usage_error(std::string_view tool, std::string_view what) {
  std::cerr << tool << ": " << what << "; " << tool << " --help shows the usage\n";
  return kUsageExit;
}

}  // namespace graph::cli
