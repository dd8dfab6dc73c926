#pragma once
// Errors thrown by fxcpp. Every message names the node, target or position
// involved and, where it can, what to do about it.

#include <stdexcept>
#include <string>

namespace fx {

// Base of every error fxcpp throws on bad input or misuse of the API.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Misuse of the Graph/Node API: erasing a node that still has users, using a
// node of another graph, a second output node, a use before its definition...
class GraphError : public Error {
 public:
  using Error::Error;
};

// A broken graph invariant found by Graph::lint().
class LintError : public Error {
 public:
  using Error::Error;
};

// A file that fxcpp cannot load: malformed, truncated, or inconsistent
// (fx::load). The message names the file and the position in it.
class LoadError : public Error {
 public:
  using Error::Error;
};

}  // namespace fx
