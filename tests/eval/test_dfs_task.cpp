// The dfs benchmark's generator (documented in src/eval/dfs_task.h) and scorer: problems
// are deterministic per seed, graphs have the documented family and size, the stated answer
// is what an independent recursive DFS gives, correct answers are accepted in the allowed
// spellings and corrupted ones rejected.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <set>

#include "eval/dfs_task.h"

namespace triattn::eval {
namespace {

// The stack after `steps` steps, from a recursive DFS that logs each call and return: an
// independent statement of the definition (the product simulates with an explicit stack).
std::vector<int> recursive_reference(const std::vector<std::vector<int>>& adj, int steps) {
  std::vector<std::vector<int>> snapshots;  // stack after step 0, 1, 2, ...
  std::vector<int> stack;
  std::vector<bool> seen(adj.size(), false);
  std::function<void(int)> dfs = [&](int v) {
    seen[static_cast<size_t>(v)] = true;
    stack.push_back(v);
    snapshots.push_back(stack);  // the call is a step
    for (int u : adj[static_cast<size_t>(v)])
      if (!seen[static_cast<size_t>(u)]) dfs(u);
    stack.pop_back();
    snapshots.push_back(stack);  // the return is a step
  };
  dfs(0);
  return static_cast<size_t>(steps) < snapshots.size() ? snapshots[static_cast<size_t>(steps)] : std::vector<int>{};
}

bool connected(const std::vector<std::vector<int>>& adj) {
  std::vector<bool> seen(adj.size(), false);
  std::vector<int> todo = {0};
  seen[0] = true;
  size_t n = 1;
  while (!todo.empty()) {
    const int v = todo.back();
    todo.pop_back();
    for (int u : adj[static_cast<size_t>(v)])
      if (!seen[static_cast<size_t>(u)]) seen[static_cast<size_t>(u)] = true, ++n, todo.push_back(u);
  }
  return n == adj.size();
}

TEST(EvalDfsTask, DeterministicPerSeed) {
  const DfsProblem a = make_dfs_problem(12, 7, 3), b = make_dfs_problem(12, 7, 3);
  EXPECT_EQ(a.prompt, b.prompt);
  EXPECT_EQ(a.answer, b.answer);
  EXPECT_NE(make_dfs_problem(12, 8, 3).prompt, a.prompt);
  EXPECT_NE(make_dfs_problem(12, 7, 4).prompt, a.prompt);
}

TEST(EvalDfsTask, PinnedProblem) {
  // Pinned so a change to the generator (which changes every published figure) is noticed.
  const DfsProblem p = make_dfs_problem(6, 1, 0);
  EXPECT_EQ(p.n_nodes, 6);
  EXPECT_NE(p.prompt.find("right after step 6?"), std::string::npos);
  std::string adj;
  for (size_t v = 0; v < p.adjacency.size(); ++v) {
    adj += std::to_string(v) + ":";
    for (int u : p.adjacency[v]) adj += " " + std::to_string(u);
    adj += ";";
  }
  // By hand: [0], call 1, call 2, call 4, return 4, call 5, call 3 -> 0 1 2 5 3.
  EXPECT_EQ(adj + " -> " + p.answer, "0: 1;1: 0 2 3 4 5;2: 1 4 5;3: 1 5;4: 1 2;5: 1 2 3; -> 0 1 2 5 3");
}

TEST(EvalDfsTask, GraphFamilyAndAnswerMatchReference) {
  for (int k : {1, 2, 6, 9, 14, 20})
    for (int i = 0; i < 20; ++i) {
      const DfsProblem p = make_dfs_problem(k, 1, i);
      ASSERT_EQ(p.n_nodes, k / 2 + 3);
      size_t degree_sum = 0;
      for (size_t v = 0; v < p.adjacency.size(); ++v) {
        const auto& l = p.adjacency[v];
        EXPECT_TRUE(std::is_sorted(l.begin(), l.end()));
        EXPECT_EQ(std::set<int>(l.begin(), l.end()).size(), l.size()) << "no parallel edges";
        for (int u : l) {
          EXPECT_NE(static_cast<size_t>(u), v) << "no self loops";
          const auto& back = p.adjacency[static_cast<size_t>(u)];
          EXPECT_TRUE(std::find(back.begin(), back.end(), static_cast<int>(v)) != back.end()) << "undirected";
        }
        degree_sum += l.size();
      }
      const int n = p.n_nodes;
      EXPECT_EQ(degree_sum / 2, static_cast<size_t>(std::min(n - 1 + n / 2, n * (n - 1) / 2)));
      EXPECT_TRUE(connected(p.adjacency));
      const std::vector<int> ref = recursive_reference(p.adjacency, k);
      EXPECT_EQ(p.stack, ref) << "k=" << k << " i=" << i;
      ASSERT_FALSE(ref.empty()) << "the search must still run after k steps";
      EXPECT_EQ(ref.front(), 0);
      std::string want;
      for (size_t j = 0; j < ref.size(); ++j) want += (j ? " " : "") + std::to_string(ref[j]);
      EXPECT_EQ(p.answer, want);
      EXPECT_NE(p.prompt.find("\\boxed{"), std::string::npos);
    }
}

TEST(EvalDfsTask, ScorerAcceptsCorrectRejectsCorrupted) {
  const DfsProblem p = make_dfs_problem(10, 3, 5);
  ASSERT_GE(p.stack.size(), 2u);
  const std::string a = p.answer;
  EXPECT_TRUE(dfs_correct("reasoning...\n\\boxed{" + a + "}", a));
  std::string commas;
  for (size_t j = 0; j < p.stack.size(); ++j) commas += (j ? ", " : "") + std::to_string(p.stack[j]);
  EXPECT_TRUE(dfs_correct("\\boxed{[" + commas + "]}", a));
  EXPECT_TRUE(dfs_correct("\\boxed{0 9} no wait \\boxed{" + a + "}", a)) << "the last box counts";
  // Corruptions: a node changed, one dropped, one added, order reversed, no box, junk.
  std::vector<int> s = p.stack;
  auto text = [](const std::vector<int>& v) {
    std::string t;
    for (size_t j = 0; j < v.size(); ++j) t += (j ? " " : "") + std::to_string(v[j]);
    return "\\boxed{" + t + "}";
  };
  std::vector<int> changed = s;
  changed.back() += 1;
  EXPECT_FALSE(dfs_correct(text(changed), a));
  EXPECT_FALSE(dfs_correct(text(std::vector<int>(s.begin(), s.end() - 1)), a));
  std::vector<int> added = s;
  added.push_back(99);
  EXPECT_FALSE(dfs_correct(text(added), a));
  EXPECT_FALSE(dfs_correct(text(std::vector<int>(s.rbegin(), s.rend())), a));
  EXPECT_FALSE(dfs_correct(a, a)) << "no \\boxed{}";
  EXPECT_FALSE(dfs_correct("\\boxed{" + a + " x}", a));
  EXPECT_FALSE(dfs_correct("\\boxed{" + a + "} then \\boxed{0 9 9 9}", a));
}

TEST(EvalDfsTask, RejectsBadStepCounts) {
  EXPECT_THROW(make_dfs_problem(0, 1, 0), std::exception);
  EXPECT_THROW(make_dfs_problem(20000, 1, 0), std::exception);
}

}  // namespace
}  // namespace triattn::eval
