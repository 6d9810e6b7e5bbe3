// posix::write_file_atomically given a symlink writes the link's final target, atomically in the
// target's folder, and leaves the links as links (`mote convert -o`, chat's /export and /save use it):
// a link to an existing file, a dangling link, a chain of links, a loop.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "cli_support.hpp"
#include "io/file_map.hpp"

namespace fs = std::filesystem;
using mote_cli_test::slurp;
using mote_cli_test::workspace;

namespace {

bool write(const std::string &path, const std::string &text, std::string *error) {
  return mote::posix::write_file_atomically(path, text.data(), text.size(), error);
}

// A fresh folder of the workspace, with a sub-folder for targets (a different folder from the links').
std::string fresh_folder(const std::string &name) {
  const std::string dir = workspace().path(name);
  fs::remove_all(dir);
  fs::create_directories(dir + "/targets");
  return dir;
}

// Nothing but the given names in folder (no temporary file left behind).
void expect_only(const std::string &folder, std::vector<std::string> names) {
  std::vector<std::string> found;
  for (const auto &e : fs::directory_iterator(folder)) found.push_back(e.path().filename().string());
  std::sort(found.begin(), found.end());
  std::sort(names.begin(), names.end());
  CHECK(found == names);
}

}  // namespace

TEST_CASE("writing to a symlink replaces its target atomically and keeps the link") {
  const std::string dir = fresh_folder("link_to_file");
  const std::string target = dir + "/targets/model.mote";
  mote_cli_test::write_text(target, "old");
  struct stat before {};
  REQUIRE(stat(target.c_str(), &before) == 0);
  fs::create_symlink("targets/model.mote", dir + "/link.mote");  // relative: resolved from the link's folder
  std::string error;
  REQUIRE_MESSAGE(write(dir + "/link.mote", "new", &error), error);
  CHECK(fs::is_symlink(dir + "/link.mote"));
  CHECK(fs::read_symlink(dir + "/link.mote") == "targets/model.mote");
  CHECK(slurp(target) == "new");
  struct stat after {};
  REQUIRE(stat(target.c_str(), &after) == 0);
  CHECK(after.st_ino != before.st_ino);  // a new file renamed over the target, not rewritten in place
  expect_only(dir, {"link.mote", "targets"});
  expect_only(dir + "/targets", {"model.mote"});
}

TEST_CASE("writing to a dangling symlink creates its target") {
  const std::string dir = fresh_folder("dangling");
  fs::create_symlink(dir + "/targets/new.mote", dir + "/link.mote");  // absolute
  std::string error;
  REQUIRE_MESSAGE(write(dir + "/link.mote", "made", &error), error);
  CHECK(fs::is_symlink(dir + "/link.mote"));
  CHECK(slurp(dir + "/targets/new.mote") == "made");
  expect_only(dir + "/targets", {"new.mote"});
  // A dangling link into a missing folder: an error naming the target and the link.
  fs::create_symlink(dir + "/missing/x.mote", dir + "/nowhere.mote");
  CHECK(!write(dir + "/nowhere.mote", "x", &error));
  CHECK(error.find(dir + "/missing/x.mote") != std::string::npos);
  CHECK(error.find("the target of the symlink '" + dir + "/nowhere.mote'") != std::string::npos);
  CHECK(fs::is_symlink(dir + "/nowhere.mote"));
}

TEST_CASE("writing to a chain of symlinks writes the last one's target; a loop is an error") {
  const std::string dir = fresh_folder("chain");
  mote_cli_test::write_text(dir + "/targets/final.mote", "old");
  fs::create_symlink("final.mote", dir + "/targets/middle.mote");
  fs::create_symlink("targets/middle.mote", dir + "/first.mote");
  std::string error;
  REQUIRE_MESSAGE(write(dir + "/first.mote", "new", &error), error);
  CHECK(slurp(dir + "/targets/final.mote") == "new");
  CHECK(fs::is_symlink(dir + "/first.mote"));
  CHECK(fs::is_symlink(dir + "/targets/middle.mote"));
  expect_only(dir + "/targets", {"final.mote", "middle.mote"});

  fs::create_symlink("loop_b", dir + "/loop_a");
  fs::create_symlink("loop_a", dir + "/loop_b");
  CHECK(!write(dir + "/loop_a", "x", &error));
  CHECK(error == "'" + dir + "/loop_a' is a loop of symlinks (more than 40 hops): not writing it");
  CHECK(fs::is_symlink(dir + "/loop_a"));
}

TEST_CASE("mote convert -o through a symlink writes the target") {
  if (!mote_cli_test::have_cli()) return;
  const std::string dir = fresh_folder("convert_link");
  mote_cli_test::write_text(dir + "/targets/out.mote", "old");
  fs::create_symlink("targets/out.mote", dir + "/out.mote");
  const mote_cli_test::Result r =
      mote_cli_test::run_cli("convert " + mote_cli_test::quote(mote_test::golden_path("tiny_llama.gguf")) + " -o " +
                             mote_cli_test::quote(dir + "/out.mote"));
  INFO("stderr: " << r.err);
  CHECK(r.code == 0);
  CHECK(fs::is_symlink(dir + "/out.mote"));
  CHECK(slurp(dir + "/targets/out.mote").compare(0, 4, "MOTE") == 0);
}
