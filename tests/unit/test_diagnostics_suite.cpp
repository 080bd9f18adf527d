// The split-file diagnostics suite: every tests/diagnostics/*.fg holds cases
// separated by `# -----` lines, each annotated with the diagnostics it must
// produce (format: tests/diagnostics/README.md). Each case is compiled on its
// own; every produced diagnostic must be expected and every expectation met.
//
// Also generated inputs that are awkward to keep in a file (unprintable and
// non-UTF-8 bytes, an empty file, a 50 MB spec, random bytes and token soup):
// the front end must answer with located, well-rendered diagnostics, in
// bounded time, and never crash.
#include "fusegen/Diagnostics.h"
#include "fusegen/Frontend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace fusegen {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;

const fs::path kSuiteDir = fs::path(FUSEGEN_SOURCE_DIR) / "tests" / "diagnostics";
// The suite files; a test below checks that no file in the folder is missed.
const std::vector<std::string> kSuiteFiles = {"syntax.fg", "names.fg",  "types.fg",   "ops.fg",    "shapes.fg",
                                              "attributes.fg", "state.fg", "options.fg", "limits.fg"};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

const char* severity_name(Severity severity) {
  switch (severity) {
  case Severity::Error: return "error";
  case Severity::Warning: return "warning";
  case Severity::Note: return "note";
  }
  return "?";
}

// ---- Cases and annotations ----

struct SuiteCase {
  std::string file;        // for messages, e.g. "syntax.fg"
  uint32_t first_line = 1; // line of the file on which the case starts
  std::string text;        // the case's lines, each ending in '\n'

  // Case lines are numbered from 1; messages use the file's numbering.
  uint32_t file_line(uint32_t case_line) const { return first_line + case_line - 1; }
};

bool is_separator(std::string_view line) {
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r'))
    line.remove_suffix(1);
  return line == "# -----";
}

std::vector<SuiteCase> split_cases(const std::string& file, const std::string& text) {
  std::vector<SuiteCase> cases = {{file, 1, ""}};
  uint32_t line_no = 0;
  for (const std::string& line : split_lines(text)) {
    ++line_no;
    if (is_separator(line))
      cases.push_back({file, line_no + 1, ""});
    else
      cases.back().text += line + "\n";
  }
  return cases;
}

// A diagnostic, expected (col 0: any column) or produced; lines are the case's.
struct Expected {
  Severity severity = Severity::Error;
  uint32_t line = 0;
  uint32_t col = 0;
  std::string message; // expected: a substring of the produced message
};

std::optional<uint32_t> take_number(std::string_view& text) {
  size_t digits = 0;
  while (digits < text.size() && digits < 9 && text[digits] >= '0' && text[digits] <= '9')
    ++digits;
  if (digits == 0)
    return std::nullopt;
  uint32_t value = static_cast<uint32_t>(std::stoul(std::string(text.substr(0, digits))));
  text.remove_prefix(digits);
  return value;
}

bool take_prefix(std::string_view& text, std::string_view prefix) {
  if (text.substr(0, prefix.size()) != prefix)
    return false;
  text.remove_prefix(prefix.size());
  return true;
}

// Where the body of an annotation (after `# expect-`) starts in `line`, or
// npos when the line has none.
size_t find_annotation(std::string_view line) {
  size_t at = line.find("expect-");
  if (at == std::string_view::npos)
    return std::string_view::npos;
  size_t hash = line.rfind('#', at);
  bool in_comment = hash != std::string_view::npos &&
                    line.substr(hash + 1, at - hash - 1).find_first_not_of(' ') == std::string_view::npos;
  return in_comment ? at + 7 : std::string_view::npos;
}

std::optional<Severity> take_severity(std::string_view& text) {
  if (take_prefix(text, "error"))
    return Severity::Error;
  if (take_prefix(text, "warning"))
    return Severity::Warning;
  if (take_prefix(text, "note"))
    return Severity::Note;
  return std::nullopt;
}

// `@+N` / `@-N` relative to `line_no`; without '@' the annotation's own line.
std::optional<int64_t> take_target_line(std::string_view& text, uint32_t line_no) {
  if (!take_prefix(text, "@"))
    return line_no;
  bool minus = take_prefix(text, "-");
  if (!minus && !take_prefix(text, "+"))
    return std::nullopt;
  std::optional<uint32_t> offset = take_number(text);
  if (!offset)
    return std::nullopt;
  return minus ? int64_t{line_no} - *offset : int64_t{line_no} + *offset;
}

// `COL:` right after the annotation's colon; 0 (any column) when absent.
uint32_t take_column(std::string_view& text) {
  std::string_view before = text;
  std::optional<uint32_t> col = take_number(text);
  if (col && take_prefix(text, ":"))
    return *col;
  text = before; // digits not followed by ':' belong to the message
  return 0;
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t'))
    text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r'))
    text.remove_suffix(1);
  return text;
}

// Parses `# expect-KIND[@+N|@-N]:[COL:] MESSAGE` on case line `line_no`.
// Returns nullopt when the line has no annotation; sets `problem` when it has
// a malformed one (so a typo cannot silently disable an expectation).
std::optional<Expected> parse_annotation(std::string_view line, uint32_t line_no,
                                         std::string& problem) {
  size_t start = find_annotation(line);
  if (start == std::string_view::npos)
    return std::nullopt;
  std::string_view rest = line.substr(start);
  std::optional<Severity> severity = take_severity(rest);
  // A plain integer: GCC -O2 warns (falsely) about an optional here.
  int64_t target = 0;
  bool has_target = false;
  if (severity) {
    std::optional<int64_t> parsed = take_target_line(rest, line_no);
    has_target = parsed.has_value();
    target = parsed.value_or(0);
  }
  if (!severity)
    problem = "unknown annotation kind";
  else if (!has_target)
    problem = "expected @+N or @-N";
  else if (!take_prefix(rest, ":"))
    problem = "expected ':' after the annotation kind";
  else if (target < 1)
    problem = "the target line is before the case";
  if (!problem.empty())
    return std::nullopt;
  uint32_t col = take_column(rest);
  std::string_view message = trim(rest);
  if (message.empty()) {
    problem = "empty message";
    return std::nullopt;
  }
  return Expected{*severity, static_cast<uint32_t>(target), col, std::string(message)};
}

// ---- Checking one case ----

std::string describe(const SuiteCase& c, const Expected& d) {
  std::string where = c.file + ":" + std::to_string(c.file_line(d.line));
  if (d.col != 0)
    where += ":" + std::to_string(d.col);
  return where + ": " + severity_name(d.severity) + ": " + d.message;
}

bool is_printable_text(const std::string& text) {
  return std::all_of(text.begin(), text.end(), [](char ch) {
    auto c = static_cast<unsigned char>(ch);
    return c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7f);
  });
}

std::string header_of(const Diagnostic& d, const SourceManager& sources) {
  return sources.name(d.loc.file) + ":" + std::to_string(d.loc.line) + ":" + std::to_string(d.loc.col) +
         ": " + severity_name(d.severity) + ": " + d.message;
}

// The source line and caret rendered for `d` (at lines[next], lines[next + 1]);
// a problem or "". A long line is shown as a window ("... " first) around the
// column; then the caret must sit under the same character as the column.
std::string source_and_caret_problem(const Diagnostic& d, const std::vector<std::string>& lines, size_t next,
                                     const SourceManager& sources) {
  if (next + 1 >= lines.size() || lines[next].rfind("  ", 0) != 0)
    return "no source line";
  const std::string& caret = lines[next + 1];
  size_t caret_at = caret.find('^');
  if (caret.rfind("  ", 0) != 0 || caret_at + 1 != caret.size() ||
      caret.find_first_not_of(" \t", 2) != caret_at)
    return "no caret line";
  size_t col = d.loc.col == 0 ? 0 : d.loc.col - 1;
  std::string shown = lines[next].substr(2);
  size_t at = caret_at - 2;
  if (shown.rfind("... ", 0) != 0)
    return at == col ? "" : "caret at column " + std::to_string(caret_at - 1);
  std::string_view source = sources.line_text(d.loc.file, d.loc.line);
  if (col >= source.size())
    return at >= shown.size() ? "" : "caret not past the end of the line";
  auto c = static_cast<unsigned char>(source[col]);
  char expected = (c == '\t' || (c >= 0x20 && c < 0x7f)) ? static_cast<char>(c) : '?';
  return at < shown.size() && shown[at] == expected ? "" : "caret not under column " + std::to_string(col + 1);
}

// Problems with the rendered text: each diagnostic must read
// `name:line:col: severity: message`, then the source line and a caret under
// the column. The renderer shows no source for an empty line, such as the
// end of a file after its last newline.
std::vector<std::string> rendering_problems(const Diagnostics& diags, const SourceManager& sources) {
  std::vector<std::string> problems;
  std::string rendered = diags.render(sources);
  if (!is_printable_text(rendered))
    problems.push_back("rendered text has an unprintable byte");
  std::vector<std::string> lines = split_lines(rendered);
  size_t next = 0;
  for (const Diagnostic& d : diags.all()) {
    if (!d.loc.valid()) {
      problems.push_back("diagnostic without a location: " + d.message);
      return problems;
    }
    std::string header = header_of(d, sources);
    if (next >= lines.size() || lines[next] != header) {
      problems.push_back("expected the line '" + header + "', found '" +
                         (next < lines.size() ? lines[next] : "end of output") + "'");
      return problems;
    }
    ++next;
    if (sources.line_text(d.loc.file, d.loc.line).empty())
      continue;
    if (std::string problem = source_and_caret_problem(d, lines, next, sources); !problem.empty()) {
      problems.push_back(problem + " for '" + header + "'");
      return problems;
    }
    next += 2;
  }
  if (next < lines.size() && lines[next].find(" more errors not shown") != std::string::npos)
    ++next;
  if (next < lines.size())
    problems.push_back("unexpected rendered line '" + lines[next] + "'");
  return problems;
}

struct CaseResult {
  SourceManager sources;
  Diagnostics diags;
  bool compiled = false;
};

std::unique_ptr<CaseResult> compile_text(const std::string& name, std::string text) {
  auto result = std::make_unique<CaseResult>();
  uint32_t file = result->sources.add_buffer(name, std::move(text));
  result->compiled = compile_spec(result->sources, file, result->diags).has_value();
  return result;
}

// The expectations of a case; malformed annotations go to `problems`.
std::vector<Expected> read_expectations(const SuiteCase& c, std::vector<std::string>& problems) {
  std::vector<Expected> expected;
  uint32_t line_no = 0;
  for (const std::string& line : split_lines(c.text)) {
    ++line_no;
    std::string problem;
    if (std::optional<Expected> e = parse_annotation(line, line_no, problem))
      expected.push_back(*e);
    else if (!problem.empty())
      problems.push_back("bad annotation on line " + std::to_string(c.file_line(line_no)) + ": " + problem);
  }
  return expected;
}

bool matches(const Expected& expected, const Expected& produced) {
  return produced.severity == expected.severity && produced.line == expected.line &&
         (expected.col == 0 || produced.col == expected.col) &&
         produced.message.find(expected.message) != std::string::npos;
}

// Pairs each expectation with a distinct produced diagnostic; reports the
// expectations left over and the diagnostics nobody expected.
void match_diagnostics(const SuiteCase& c, const std::vector<Expected>& expected,
                       const std::vector<Expected>& produced, std::vector<std::string>& problems) {
  std::vector<bool> used(produced.size(), false);
  for (const Expected& e : expected) {
    size_t i = 0;
    while (i < produced.size() && (used[i] || !matches(e, produced[i])))
      ++i;
    if (i < produced.size())
      used[i] = true;
    else
      problems.push_back("expected, not produced: " + describe(c, e));
  }
  for (size_t i = 0; i < produced.size(); ++i)
    if (!used[i])
      problems.push_back("produced, not expected: " + describe(c, produced[i]));
}

// Compiles `c` and compares its diagnostics with its annotations. Returns a
// report naming the case and every mismatch, or "" when all is well.
std::string check_case(const SuiteCase& c) {
  std::vector<std::string> problems;
  std::vector<Expected> expected = read_expectations(c, problems);
  // Case-relative lines in the buffer; its name says where the case starts.
  std::unique_ptr<CaseResult> result = compile_text(c.file + ":" + std::to_string(c.first_line), c.text);
  std::vector<Expected> produced;
  for (const Diagnostic& d : result->diags.all())
    produced.push_back({d.severity, d.loc.line, d.loc.col, d.message});
  match_diagnostics(c, expected, produced, problems);
  if (result->compiled == result->diags.has_errors())
    problems.push_back(result->compiled ? "compiled despite errors" : "failed without an error");
  for (const std::string& p : rendering_problems(result->diags, result->sources))
    problems.push_back("rendering: " + p);
  if (problems.empty())
    return "";

  std::string report = c.file + ":" + std::to_string(c.first_line) + ": the case starting here failed:\n";
  for (const std::string& p : problems)
    report += "  " + p + "\n";
  report += "  all diagnostics of the case:\n";
  for (const Expected& p : produced)
    report += "    " + describe(c, p) + "\n";
  return report;
}

void check_suite_file(const std::string& name) {
  std::string text = read_file(kSuiteDir / name);
  ASSERT_FALSE(text.empty()) << "cannot read " << (kSuiteDir / name);
  for (const SuiteCase& c : split_cases(name, text))
    if (std::string failure = check_case(c); !failure.empty())
      ADD_FAILURE() << failure;
}

// A generated case: the whole text is one case.
void check_generated(const std::string& name, std::string text) {
  EXPECT_EQ(check_case({name, 1, std::move(text)}), "");
}

// ---- The suite files ----

TEST(DiagnosticsSuite, Syntax) { check_suite_file("syntax.fg"); }
TEST(DiagnosticsSuite, Names) { check_suite_file("names.fg"); }
TEST(DiagnosticsSuite, Types) { check_suite_file("types.fg"); }
TEST(DiagnosticsSuite, Ops) { check_suite_file("ops.fg"); }
TEST(DiagnosticsSuite, Shapes) { check_suite_file("shapes.fg"); }
TEST(DiagnosticsSuite, Attributes) { check_suite_file("attributes.fg"); }
TEST(DiagnosticsSuite, State) { check_suite_file("state.fg"); }
TEST(DiagnosticsSuite, Options) { check_suite_file("options.fg"); }
TEST(DiagnosticsSuite, Limits) { check_suite_file("limits.fg"); }

TEST(DiagnosticsSuite, EveryFileIsChecked) {
  std::set<std::string> listed(kSuiteFiles.begin(), kSuiteFiles.end());
  for (const fs::directory_entry& entry : fs::directory_iterator(kSuiteDir)) {
    if (entry.path().extension() == ".fg") {
      EXPECT_TRUE(listed.count(entry.path().filename().string()))
          << entry.path().filename() << " has no TEST in test_diagnostics_suite.cpp";
    }
  }
}

// Guards against a file cut short or cases merged by a lost separator.
TEST(DiagnosticsSuite, SuiteHasManyAnnotatedCases) {
  size_t cases = 0, annotated = 0;
  for (const std::string& name : kSuiteFiles) {
    for (const SuiteCase& c : split_cases(name, read_file(kSuiteDir / name))) {
      ++cases;
      annotated += c.text.find("expect-") != std::string::npos;
    }
  }
  EXPECT_GE(cases, 150u);
  EXPECT_GE(annotated, 130u);
}

// ---- The harness itself ----

TEST(DiagnosticsSuite, SplitsCasesAndKeepsFileLines) {
  std::vector<SuiteCase> cases = split_cases("t.fg", "a\nb\n# -----\nc\n# ----- \nd");
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].text, "a\nb\n");
  EXPECT_EQ(cases[1].first_line, 4u);
  EXPECT_EQ(cases[1].text, "c\n");
  EXPECT_EQ(cases[2].first_line, 6u);
  EXPECT_EQ(cases[2].file_line(1), 6u);
}

TEST(DiagnosticsSuite, ParsesAnnotations) {
  std::string problem;
  auto parse = [&](std::string_view line) { return parse_annotation(line, 10, problem); };
  std::optional<Expected> e = parse("  x = y  # expect-error: use of undefined name 'y'");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 10u);
  EXPECT_EQ(e->col, 0u);
  EXPECT_EQ(e->message, "use of undefined name 'y'");
  e = parse("# expect-note@-2:7: declared here");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->severity, Severity::Note);
  EXPECT_EQ(e->line, 8u);
  EXPECT_EQ(e->col, 7u);
  e = parse("#expect-error@+3: 12 vs 16");
  ASSERT_TRUE(e);
  EXPECT_EQ(e->line, 13u);
  EXPECT_EQ(e->col, 0u);
  EXPECT_EQ(e->message, "12 vs 16");
  EXPECT_FALSE(parse("  output y = relu(x)  # no annotation here"));
  EXPECT_EQ(problem, "");
  for (std::string_view bad : {"# expect-eror: x", "# expect-error@3: x", "# expect-error x",
                               "# expect-error:", "# expect-error@-10: x"}) {
    problem.clear();
    EXPECT_FALSE(parse(bad)) << bad;
    EXPECT_NE(problem, "") << bad;
  }
}

TEST(DiagnosticsSuite, ReportsMismatchesWithFileLines) {
  SuiteCase c{"t.fg", 20,
              "fusion f {\n"
              "  input x : f32[4]\n"
              "  output y = relu(z)  # expect-error:19: use of undefined name 'q'\n"
              "}\n"};
  std::string report = check_case(c);
  EXPECT_NE(report.find("t.fg:20: the case starting here failed"), std::string::npos) << report;
  EXPECT_NE(report.find("expected, not produced: t.fg:22:19: error: use of undefined name 'q'"),
            std::string::npos)
      << report;
  EXPECT_NE(report.find("produced, not expected: t.fg:22:19: error: use of undefined name 'z'"),
            std::string::npos)
      << report;
  // A column or line that differs is a mismatch too.
  c.text = "fusion f {\n  input x : f32[4]\n  output y = relu(z)  # expect-error:18: name 'z'\n}\n";
  EXPECT_NE(check_case(c), "");
  c.text = "fusion f {\n  input x : f32[4]\n  # expect-error: name 'z'\n  output y = relu(z)\n}\n";
  EXPECT_NE(check_case(c), "");
  c.text = "fusion f {\n  input x : f32[4]\n  output y = relu(x)  # expect-note: nothing\n}\n";
  EXPECT_NE(check_case(c), "");
}

// ---- Generated inputs ----

TEST(DiagnosticsSuite, EmptyAndCommentOnlyFiles) {
  for (std::string text : {""s, "\n\n\n"s, "   \t  "s, "# only a comment\n"s, "# a\n#\n# b"s}) {
    std::unique_ptr<CaseResult> result = compile_text("empty.fg", text);
    ASSERT_EQ(result->diags.all().size(), 1u) << '"' << text << '"';
    const Diagnostic& d = result->diags.all()[0];
    EXPECT_EQ(d.message, "no fusion in file");
    EXPECT_EQ(d.loc.line, 1u);
    EXPECT_EQ(d.loc.col, 1u);
    EXPECT_FALSE(result->compiled);
    EXPECT_EQ(rendering_problems(result->diags, result->sources), std::vector<std::string>{});
  }
}

// Unprintable and non-UTF-8 bytes: one located error per run of bad bytes,
// shown escaped in messages and as '?' in the source line.
TEST(DiagnosticsSuite, UnprintableAndNonUtf8Bytes) {
  const std::string head = "fusion f {\n  input x : f32[4]\n";
  check_generated("control.fg",
                  head + "  output y = relu(x) \x01\x02  # expect-error:22: unexpected character '\\x01'\n}\n");
  check_generated("nul.fg", "fusion f {\n  input x\0 : f32[4]  # expect-error:10: unexpected character '\\x00'\n"
                            "  output y = relu(x)\n}\n"s);
  // A terminal escape sequence: the ESC byte, then `[31m` as ordinary tokens.
  check_generated("escape.fg",
                  head + "  output y = relu(x) \x1b[31m  # expect-error:22: unexpected character '\\x1b'\n"
                         "  # expect-error@-1:24: invalid number literal '31m'\n}\n");
  check_generated("delete.fg",
                  head + "  output y = relu(x)\x7f  # expect-error:21: unexpected character '\\x7f'\n}\n");
  check_generated("latin1.fg",
                  head + "  output y = relu(x) \xff\xfe  # expect-error:22: unexpected character '\\xff'\n}\n");
  // A UTF-8 identifier: each run of non-ASCII bytes is one error.
  check_generated("utf8.fg",
                  "fusion f {\n"
                  "  input \xc3\xa9t\xc3\xa9 : f32[4]  # expect-error:9: unexpected character '\\xc3'\n"
                  "  # expect-error@-1:12: unexpected character '\\xc3'\n"
                  "  output y = relu(x)\n}\n");
  // A UTF-8 byte order mark at the start is skipped; elsewhere it is a bad byte.
  check_generated("bom.fg", "\xef\xbb\xbf" "fusion f {\n"
                            "  input x : f32[4]\n  output y = relu(x)\n}\n");
  check_generated("bom_inside.fg", "fusion f { \xef\xbb\xbf # expect-error:12: unexpected character '\\xef'\n"
                                   "  input x : f32[4]\n  output y = relu(x)\n}\n");
  // Any byte but a newline is fine in a comment.
  check_generated("comment.fg", "# caf\xc3\xa9 \xff\xfe \x01 \x1b[0m\n" + head + "  output y = relu(x)\n}\n");
}

TEST(DiagnosticsSuite, TabsAndCrLfKeepColumnsAndCarets) {
  check_generated("tabs.fg", "fusion f {\n\tinput x : f32[4]\n"
                             "\toutput y = relu(z)  # expect-error:18: undefined name 'z'\n}\n");
  check_generated("crlf.fg", "fusion f {\r\n  input x : f32[4]\r\n"
                             "  output y = relu(z)  # expect-error:19: undefined name 'z'\r\n}\r\n");
  std::unique_ptr<CaseResult> result = compile_text("crlf.fg", "fusion f {\r\n  output y = relu(z)\r\n}\r\n");
  EXPECT_EQ(result->diags.render(result->sources),
            "crlf.fg:2:19: error: use of undefined name 'z'\n"
            "    output y = relu(z)\n"
            "                    ^\n");
}

// Random bytes: many errors, but a bounded number shown, each located inside
// the buffer and rendered in the documented form.
TEST(DiagnosticsSuite, RandomBinaryBytes) {
  std::mt19937_64 rng(20240611);
  for (size_t size : {size_t{1}, size_t{100}, size_t{4096}, size_t{65536}, size_t{1} << 20}) {
    for (int round = 0; round < 3; ++round) {
      std::string text(size, '\0');
      for (char& c : text)
        c = static_cast<char>(rng() & 0xff);
      uint32_t lines = static_cast<uint32_t>(std::count(text.begin(), text.end(), '\n')) + 1;
      auto start = std::chrono::steady_clock::now();
      std::unique_ptr<CaseResult> result = compile_text("random.fg", text);
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_LT(seconds, 10.0) << size << " bytes";
      EXPECT_TRUE(result->diags.has_errors()) << size << " bytes";
      EXPECT_FALSE(result->compiled);
      EXPECT_LE(result->diags.all().size(), 100u);
      for (const Diagnostic& d : result->diags.all()) {
        EXPECT_TRUE(d.loc.valid()) << d.message;
        EXPECT_LE(d.loc.line, lines) << d.message;
        EXPECT_GE(d.loc.col, 1u) << d.message;
      }
      EXPECT_EQ(rendering_problems(result->diags, result->sources), std::vector<std::string>{})
          << size << " bytes, round " << round;
    }
  }
}

// Token soup and mutated specs reach the parser's recovery paths and the
// semantic checks behind them; Debug builds keep every assertion live.
TEST(DiagnosticsSuite, TokenSoupAndMutatedSpecsNeverCrash) {
  const std::vector<std::string> tokens = {
      "fusion", "f", "g", "{", "}", "(", ")", "[", "]", ",", ":", "=", ";", "+", "-", "*", "/",
      "input", "param", "state", "output", "x", "w", "h", "N", "f32", "f16", "relu", "linear",
      "conv2d", "group_norm", "batch_norm", "sum", "max_pool2d", "clamp", "num_groups", "dim",
      "kernel_size", "training", "0", "1", "4", "-1", "2.5", "1e-5", "\"tanh\"", "None", "true",
      "\n", "\n", "# c\n", "(2, 2)", "$", "\"open"};
  std::mt19937_64 rng(7);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  std::vector<std::string> inputs;
  for (int i = 0; i < 1500; ++i) {
    std::string text;
    for (size_t n = 1 + pick(80); n > 0; --n)
      text += tokens[pick(tokens.size())] + " ";
    inputs.push_back(text);
  }
  const fs::path spec_dir = fs::path(FUSEGEN_SOURCE_DIR) / "specs" / "kernelbench";
  for (const fs::directory_entry& entry : fs::directory_iterator(spec_dir)) {
    if (entry.path().extension() != ".fg")
      continue;
    std::string spec = read_file(entry.path());
    for (int i = 0; i < 150; ++i) {
      std::string mutant = spec;
      size_t at = pick(mutant.size());
      if (i % 2)
        mutant.erase(at, 1 + pick(12));
      else
        mutant.insert(at, tokens[pick(tokens.size())]);
      inputs.push_back(mutant);
    }
  }
  for (const std::string& text : inputs) {
    std::unique_ptr<CaseResult> result = compile_text("soup.fg", text);
    EXPECT_NE(result->compiled, result->diags.has_errors()) << text;
    std::vector<std::string> problems = rendering_problems(result->diags, result->sources);
    EXPECT_EQ(problems, std::vector<std::string>{}) << text;
    if (!problems.empty())
      break; // one example is enough
  }
}

// A 50 MB spec: a huge comment block (as from a generated header) and a fusion
// of 20,000 statements. Must compile in bounded time even in Debug builds.
TEST(DiagnosticsSuite, FiftyMegabyteSpecInBoundedTime) {
  constexpr size_t kTargetBytes = size_t{50} << 20;
  constexpr int kStatements = 20000;
  std::string body = "fusion big {\n  input x : f32[N, 8]\n  h = x\n";
  for (int i = 0; i < kStatements; ++i)
    body += "  h = leaky_relu(h, 0.1)\n";
  body += "  output y = h\n}\n";
  const std::string comment_line = "# " + std::string(77, 'c') + "\n";
  std::string text;
  text.reserve(kTargetBytes + body.size());
  while (text.size() + body.size() < kTargetBytes)
    text += comment_line;
  uint32_t body_line = static_cast<uint32_t>(text.size() / comment_line.size()) + 1;
  text += body;
  ASSERT_GE(text.size(), kTargetBytes);

  auto start = std::chrono::steady_clock::now();
  std::unique_ptr<CaseResult> result = compile_text("big.fg", text);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  RecordProperty("compile_seconds_50MB", std::to_string(seconds));
  std::cout << "[ measure  ] 50 MB spec (" << kStatements << " statements) compiled in " << seconds << " s\n";
  EXPECT_LT(seconds, 20.0);
  EXPECT_TRUE(result->compiled) << result->diags.render(result->sources);

  // The same text with a mistake in its last statement: the line number is right.
  text.replace(text.rfind("output y = h"), 12, "output y = q");
  result = compile_text("big.fg", std::move(text));
  ASSERT_EQ(result->diags.all().size(), 1u);
  EXPECT_EQ(result->diags.all()[0].loc.line, body_line + 3 + kStatements);
  EXPECT_EQ(result->diags.all()[0].loc.col, 14u);
  EXPECT_EQ(rendering_problems(result->diags, result->sources), std::vector<std::string>{});
}

} // namespace
} // namespace fusegen
