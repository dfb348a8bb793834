// The JSON Schema compiler held to the corpus in tests/data/json_schema_corpus (its labels are
// the specification's, checked by tests/reference/json_schema_validator.py): each schema
// compiled, each instance fed to the recognizer byte by byte in several serialisations, and
// accepted exactly when it is valid, or exactly when it is not where the test marks a
// documented generator/validator difference (`contract`).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "core/read_file.h"
#include "grammar/gbnf.h"
#include "grammar/json_schema.h"
#include "grammar/recognizer.h"

namespace triattn::grammar::test {
namespace {

using ojson = nlohmann::ordered_json;
namespace fs = std::filesystem;

const std::string kCorpusDir = std::string(TRIATTN_SOURCE_DIR) + "/tests/data/json_schema_corpus";

// One space after ':' and ',' (the ws rule's single space).
std::string corpus_spaced(const ojson& v) {
  std::string s;
  if (v.is_object()) {
    for (auto it = v.begin(); it != v.end(); ++it)
      s += (s.empty() ? "" : ", ") + ojson(it.key()).dump() + ": " + corpus_spaced(it.value());
    return "{" + s + "}";
  }
  if (v.is_array()) {
    for (const ojson& x : v) s += (s.empty() ? "" : ", ") + corpus_spaced(x);
    return "[" + s + "]";
  }
  return v.dump();
}

// The texts an instance is checked as: its `text` alone, or its data written every way the
// grammar's white space allows.
std::vector<std::string> corpus_texts(const ojson& test) {
  if (test.contains("text")) return {test["text"].get<std::string>()};
  const ojson& d = test["data"];
  return {d.dump(), corpus_spaced(d), d.dump(2), d.dump(1, '\t'), " " + d.dump() + "\n"};
}

// Fed one byte at a time: where the grammar died (the byte index), text.size() when the
// whole text is a live prefix that is not complete, or -1 when it matches.
long corpus_feed(const Recognizer& r, const std::string& text) {
  StackSet s = r.initial(), next;
  for (size_t i = 0; i < text.size(); ++i) {
    r.advance(s, static_cast<uint8_t>(text[i]), next);
    if (!next.alive()) return static_cast<long>(i);
    std::swap(s, next);
  }
  return s.complete ? -1 : static_cast<long>(text.size());
}

std::vector<fs::path> corpus_files() {
  std::vector<fs::path> out;
  if (!fs::is_directory(kCorpusDir)) return out;
  for (const auto& e : fs::directory_iterator(kCorpusDir))
    if (e.path().extension() == ".json") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(JsonSchemaCorpus, EveryInstanceAcceptedExactlyWhenValid) {
  ASSERT_TRUE(fs::is_directory(kCorpusDir)) << "the corpus is missing: " << kCorpusDir;
  const std::vector<fs::path> files = corpus_files();
  ASSERT_GE(files.size(), 10u) << kCorpusDir;
  size_t instances = 0, texts = 0;
  for (const fs::path& path : files) {
    const std::string file = path.filename().string();
    const ojson groups = ojson::parse(read_file(path.string()));
    ASSERT_TRUE(groups.is_array() && !groups.empty()) << file;
    for (const ojson& group : groups) {
      const std::string where = file + ": " + group.at("description").get<std::string>();
      Grammar g;
      try {
        g = parse_gbnf(json_schema_to_gbnf(group.at("schema")));
      } catch (const std::exception& e) {
        ADD_FAILURE() << where << ": the schema does not compile: " << e.what();
        continue;
      }
      const Recognizer r(g);
      for (const ojson& test : group.at("tests")) {
        ++instances;
        const bool valid = test.at("valid").get<bool>();
        const bool differs = test.contains("contract");
        const bool accept = valid != differs;
        for (const std::string& text : corpus_texts(test)) {
          ++texts;
          const long died = corpus_feed(r, text);
          EXPECT_EQ(died < 0, accept)
              << where << " / " << test.at("description").get<std::string>() << (valid ? " (valid" : " (invalid")
              << (differs ? ", contract " + test["contract"].get<std::string>() + ")" : ")") << "\n  instance: " << text
              << "\n  " << (died < 0 ? "accepted" : "rejected at byte " + std::to_string(died));
        }
      }
    }
  }
  EXPECT_GE(instances, 300u);
  std::printf("%zu instances, %zu texts fed\n", instances, texts);
}

}  // namespace
}  // namespace triattn::grammar::test
