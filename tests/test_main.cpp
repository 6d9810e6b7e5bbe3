// doctest's main, plus ctest's skip convention: a test binary in which every test case that ran
// skipped (called MOTE_SKIP: its model or device is absent) exits with 77, which tests/CMakeLists
// declares as SKIP_RETURN_CODE, so ctest reports it "Skipped" instead of "Passed". A binary where
// some cases ran and others skipped passes (its skips are in its output).
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include "test_support.hpp"

namespace {

int cases_run = 0, cases_skipped = 0;

struct SkipListener : doctest::IReporter {
  explicit SkipListener(const doctest::ContextOptions &) {}
  void report_query(const doctest::QueryData &) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats &) override {}
  void test_case_start(const doctest::TestCaseData &) override { mote_test::skip_noted() = false; }
  void test_case_reenter(const doctest::TestCaseData &) override {}
  void test_case_end(const doctest::CurrentTestCaseStats &) override {
    ++cases_run;
    cases_skipped += mote_test::skip_noted() ? 1 : 0;
  }
  void test_case_exception(const doctest::TestCaseException &) override {}
  void subcase_start(const doctest::SubcaseSignature &) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData &) override {}
  void log_message(const doctest::MessageData &) override {}
  void test_case_skipped(const doctest::TestCaseData &) override {}
};

REGISTER_LISTENER("mote_skips", 1, SkipListener);

}  // namespace

int main(int argc, char **argv) {
  doctest::Context context(argc, argv);
  const int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  constexpr int kSkipped = 77;  // ctest's SKIP_RETURN_CODE in tests/CMakeLists.txt
  return cases_run > 0 && cases_skipped == cases_run ? kSkipped : 0;
}
