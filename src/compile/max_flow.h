#pragma once
// Maximum flow (Dinic's algorithm) and the minimum cut nearest the sink,
// for partition.cpp's choice of what a forward saves. The network has a few
// vertices per node of a joint graph; Dinic's bound is O(V^2 E), and the
// layered DAGs of joint graphs take a few phases (AOTAutograd solves the
// same cut with networkx's preflow-push).

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fx::compile_detail {

class MaxFlow {
 public:
  static constexpr int64_t kInfinite = int64_t{1} << 62;

  explicit MaxFlow(int vertices) : head_(static_cast<size_t>(vertices), -1) {}

  void add_edge(int from, int to, int64_t capacity) {
    edges_.push_back({to, head_[from], capacity});
    head_[from] = static_cast<int>(edges_.size()) - 1;
    edges_.push_back({from, head_[to], 0});
    head_[to] = static_cast<int>(edges_.size()) - 1;
  }

  // The maximum flow from `source` to `sink`; kInfinite when no finite cut
  // separates them.
  int64_t run(int source, int sink) {
    int64_t flow = 0;
    std::vector<int> path;  // edges from the source
    while (levels(source, sink)) {
      std::vector<int> next(head_);  // each vertex's first edge not yet found dead
      for (;;) {
        // One augmenting path in the level graph, found without recursion
        // (joint graphs are deep chains).
        path.clear();
        int u = source;
        while (u != sink) {
          int& e = next[u];
          while (e != -1 && (edges_[e].capacity == 0 || level_[edges_[e].to] != level_[u] + 1))
            e = edges_[e].next;
          if (e != -1) {
            path.push_back(e);
            u = edges_[e].to;
            continue;
          }
          if (u == source) break;
          level_[u] = -1;  // a dead end: no path to the sink goes through it
          path.pop_back();
          u = path.empty() ? source : edges_[path.back()].to;
        }
        if (u != sink) break;
        int64_t pushed = kInfinite;
        for (int e : path) pushed = std::min(pushed, edges_[e].capacity);
        for (int e : path) {
          edges_[e].capacity -= pushed;
          edges_[e ^ 1].capacity += pushed;
        }
        flow += pushed;
        if (flow >= kInfinite) return kInfinite;
      }
    }
    return flow;
  }

  // After run(): the vertices that still reach `sink` along edges with
  // capacity left. The edges into them from the other vertices are the
  // minimum cut nearest the sink.
  std::vector<char> reaching(int sink) const {
    std::vector<char> reaches(head_.size(), 0);
    std::vector<int> stack{sink};
    reaches[sink] = 1;
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      for (int e = head_[v]; e != -1; e = edges_[e].next) {
        const int u = edges_[e].to;  // edge e ^ 1 goes from u to v
        if (!reaches[u] && edges_[e ^ 1].capacity > 0) {
          reaches[u] = 1;
          stack.push_back(u);
        }
      }
    }
    return reaches;
  }

 private:
  struct Edge {
    int to, next;
    int64_t capacity;
  };

  bool levels(int source, int sink) {
    level_.assign(head_.size(), -1);
    std::vector<int> queue{source};
    level_[source] = 0;
    for (size_t i = 0; i < queue.size(); ++i)
      for (int e = head_[queue[i]]; e != -1; e = edges_[e].next)
        if (edges_[e].capacity > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[queue[i]] + 1;
          queue.push_back(edges_[e].to);
        }
    return level_[sink] >= 0;
  }

  std::vector<int> head_, level_;
  std::vector<Edge> edges_;
};

}  // namespace fx::compile_detail
